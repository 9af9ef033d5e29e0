// libFuzzer target for request_gate (and with it chunked_body and http_head's framing).
// Besides memory safety it checks what the relay relies on: however a client's bytes are
// split into reads, the same bytes go on, the same requests are judged and the same
// refusal comes; what goes on is always a prefix of what came; and a refused request's
// bytes never go on.
#include "proxy/request_gate.hpp"

#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

namespace {

using airlock::proxy::request_gate;
namespace hh = airlock::proxy::http_head;

void require(bool holds) {
  if (!holds) std::abort();
}

// Refuses requests for hosts that start with 'x'.
struct judge final : request_gate::judge {
  std::vector<std::string> hosts;
  unsigned request(const hh::request& r, std::uint64_t number) override {
    require(number == hosts.size());
    hosts.push_back(r.host);
    return !r.host.empty() && r.host[0] == 'x' ? 403 : 0;
  }
  unsigned refuse(request_gate::unframed, const hh::request*, std::uint64_t) override { return 400; }
};

struct outcome {
  std::string passed;
  std::vector<std::string> hosts;
  unsigned refused = 0;
  std::uint64_t requests = 0;
};

outcome run(std::span<const std::byte> input, std::size_t piece) {
  judge j;
  request_gate gate(j);
  outcome o;
  for (std::size_t at = 0; at < input.size(); at += piece) {
    const auto admitted = gate.admit(input.subspan(at, std::min(piece, input.size() - at)));
    o.passed.append(reinterpret_cast<const char*>(admitted.data()), admitted.size());
    gate.passed();
  }
  o.hosts = j.hosts;
  o.refused = gate.refused();
  o.requests = gate.requests();
  return o;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::span<const std::byte> input{reinterpret_cast<const std::byte*>(data), size};
  const auto whole = run(input, size == 0 ? 1 : size);
  const std::string_view all{reinterpret_cast<const char*>(data), size};
  require(all.starts_with(whole.passed));
  // Every judged head was let through, but for a refused one, the last thing judged.
  require(whole.hosts.size() == whole.requests || (whole.refused == 403 && whole.hosts.size() == whole.requests + 1));
  for (const std::size_t piece : {std::size_t{1}, std::size_t{7}, size / 3 + 1}) {
    const auto split = run(input, piece);
    require(split.passed == whole.passed && split.hosts == whole.hosts && split.refused == whole.refused &&
            split.requests == whole.requests);
  }
  return 0;
}
