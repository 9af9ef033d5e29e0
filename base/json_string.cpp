#include "base/json_string.hpp"

namespace airlock::base {

std::string json_quote(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 2);
  out += '"';
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (json_plain(c)) {
      out += ch;
    } else {
      char buf[6];
      out.append(buf, json_escape(c, buf));
    }
  }
  out += '"';
  return out;
}

}  // namespace airlock::base
