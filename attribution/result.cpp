#include "attribution/result.hpp"

#include "base/json_string.hpp"

namespace airlock::attribution {
namespace {

void append_process(std::string& out, const process_info& p) {
  out += "\"pid\":";
  out += std::to_string(p.pid);
  out += ",\"comm\":";
  out += base::json_quote(p.comm);
  out += ",\"cmdline\":";
  out += base::json_quote(p.cmdline);
}

}  // namespace

std::string render_process_json(const lookup_result& r) {
  if (r.chain.empty()) {
    return "{\"unknown\":" + base::json_quote(r.unknown.empty() ? cause::lookup_failed : r.unknown) + "}";
  }
  std::string out = "{";
  append_process(out, r.chain.front());
  out += ",\"chain\":[";
  for (std::size_t i = 0; i < r.chain.size(); ++i) {
    if (i > 0) out += ',';
    out += '{';
    append_process(out, r.chain[i]);
    out += '}';
  }
  out += "]}";
  return out;
}

}  // namespace airlock::attribution
