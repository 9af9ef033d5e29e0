#include "proxy/chunked_body.hpp"

#include <algorithm>

namespace airlock::proxy {
namespace {

int hex_value(char c) noexcept {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}
// chunk-ext and field lines: HTAB, SP, visible ASCII and obs-text; CR ends the line.
bool is_line_char(char c) noexcept {
  const auto u = static_cast<unsigned char>(c);
  return u == '\t' || (u >= 0x20 && u != 0x7f);
}

}  // namespace

chunked_body::fed chunked_body::feed(std::span<const std::byte> bytes) noexcept {
  const auto* p = reinterpret_cast<const char*>(bytes.data());
  const std::size_t n = bytes.size();
  std::size_t i = 0;
  // Every failure is found at the byte just read: the body's bytes are those before it.
  auto fail = [&] {
    state_ = state::malformed;
    return fed{i - 1, true};
  };
  while (i < n && state_ != state::done) {
    if (state_ == state::malformed) return {i, true};
    if (state_ == state::data) {
      const auto take = static_cast<std::size_t>(std::min<std::uint64_t>(left_, n - i));
      i += take;
      left_ -= take;
      if (left_ == 0) state_ = state::data_cr;
      continue;
    }
    const char c = p[i++];
    switch (state_) {
      case state::size:
        if (const int v = hex_value(c); v >= 0) {
          if (++digits_ > 15) return fail();  // 60 bits: no body is that long
          left_ = left_ * 16 + static_cast<std::uint64_t>(v);
        } else if (digits_ == 0) {
          return fail();
        } else if (c == '\r') {
          state_ = state::line_lf;
        } else if (c == ';' || c == ' ' || c == '\t') {
          state_ = state::extension;  // BWS ";" chunk-ext: not read, only bounded
        } else {
          return fail();
        }
        break;
      case state::extension:
        if (c == '\r') {
          state_ = state::line_lf;
        } else if (!is_line_char(c)) {
          return fail();
        }
        break;
      case state::line_lf:
        if (c != '\n') return fail();
        last_ = left_ == 0;
        digits_ = 0;
        line_ = 0;
        state_ = last_ ? state::trailer : state::data;
        continue;  // the line is over: its cap counts no further
      case state::data_cr:
        if (c != '\r') return fail();
        state_ = state::data_lf;
        break;
      case state::data_lf:
        if (c != '\n') return fail();
        state_ = state::size;
        continue;
      case state::trailer:
        if (c == '\r') {
          state_ = state::end_lf;
        } else if (c == ' ' || c == '\t' || !is_line_char(c)) {
          return fail();  // obs-fold, as in a head
        } else {
          state_ = state::trailer_line;
        }
        break;
      case state::trailer_line:
        if (c == '\r') {
          state_ = state::trailer_lf;
        } else if (!is_line_char(c)) {
          return fail();
        }
        break;
      case state::trailer_lf:
        if (c != '\n') return fail();
        state_ = state::trailer;
        break;
      case state::end_lf:
        if (c != '\n') return fail();
        state_ = state::done;
        continue;
      default: break;
    }
    // Caps: the chunk line, and the trailer section.
    if (state_ == state::size || state_ == state::extension || state_ == state::line_lf) {
      if (++line_ > max_line) return fail();
    } else if (state_ == state::trailer || state_ == state::trailer_line || state_ == state::trailer_lf ||
               state_ == state::end_lf) {
      if (++trailers_ > max_trailers) return fail();
    }
  }
  return {i, state_ == state::malformed};
}

}  // namespace airlock::proxy
