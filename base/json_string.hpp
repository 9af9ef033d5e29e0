#pragma once
// JSON string escaping, one way for every writer: the decision log's line writer
// (record/decision.cpp), the process object (attribution/) and the API's error bodies.
// Printable ASCII goes as it is; '"', '\\', \n, \r and \t as their short escapes; any other
// byte on its own as \u00XX, so the text is lossless and always valid UTF-8, whatever bytes
// a hostile SNI or command line holds.
#include <array>
#include <cstddef>
#include <string>
#include <string_view>

namespace airlock::base {

// Bytes that go into a JSON string as they are, as a table: one load per byte.
inline constexpr auto json_plain_bytes = [] {
  std::array<bool, 256> t{};
  for (unsigned c = 0; c < 256; ++c) t[c] = c >= 0x20 && c < 0x7f && c != '"' && c != '\\';
  return t;
}();
inline bool json_plain(unsigned char c) noexcept { return json_plain_bytes[c]; }

// The escape for a byte that is not plain, written at `out` (room for 6); its length.
inline std::size_t json_escape(unsigned char c, char* out) noexcept {
  switch (c) {
    case '"': out[0] = '\\', out[1] = '"'; return 2;
    case '\\': out[0] = '\\', out[1] = '\\'; return 2;
    case '\n': out[0] = '\\', out[1] = 'n'; return 2;
    case '\r': out[0] = '\\', out[1] = 'r'; return 2;
    case '\t': out[0] = '\\', out[1] = 't'; return 2;
    default: {
      constexpr char hex[] = "0123456789abcdef";
      out[0] = '\\', out[1] = 'u', out[2] = '0', out[3] = '0', out[4] = hex[c >> 4], out[5] = hex[c & 0xf];
      return 6;
    }
  }
}

// `s` as a JSON string literal, quotes included.
std::string json_quote(std::string_view s);

}  // namespace airlock::base
