#include "proxy/first_message.hpp"

namespace airlock::proxy {
namespace {

unsigned char at(std::span<const std::byte> b, std::size_t i) { return std::to_integer<unsigned char>(b[i]); }

}  // namespace

bool first_message_tracker::tls_complete(std::span<const std::byte> b) noexcept {
  // Walk only records that have fully arrived; each byte is looked at once.
  while (next_record_ + 5 <= b.size()) {
    const std::size_t length = (std::size_t{at(b, next_record_ + 3)} << 8) | at(b, next_record_ + 4);
    if (next_record_ + 5 + length > b.size()) break;
    if (at(b, next_record_) == 0x16) {
      for (std::size_t i = 0; i < length && handshake_bytes_ + i < 4; ++i)
        handshake_header_[handshake_bytes_ + i] = at(b, next_record_ + 5 + i);
      handshake_bytes_ += length;
    } else {
      return true;  // another record type before the hello ends: let the parser reject it
    }
    next_record_ += 5 + length;
  }
  if (handshake_bytes_ < 4) return false;
  const std::size_t message = (std::size_t{handshake_header_[1]} << 16) | (std::size_t{handshake_header_[2]} << 8) |
                              handshake_header_[3];
  return handshake_bytes_ >= message + 4;
}

bool first_message_tracker::http_complete(std::span<const std::byte> b) noexcept {
  std::size_t i = searched_ >= 3 ? searched_ - 3 : 0;
  for (; i + 4 <= b.size(); ++i)
    if (at(b, i) == '\r' && at(b, i + 1) == '\n' && at(b, i + 2) == '\r' && at(b, i + 3) == '\n') return true;
  searched_ = b.size();
  return false;
}

bool first_message_tracker::maybe_complete(std::span<const std::byte> b) noexcept {
  bool now = false;
  if (b.empty()) return false;
  if (last_full_parse_ == 0 || b.size() >= 2 * last_full_parse_) {
    now = true;  // the first bytes decide TLS/HTTP/opaque; doubling keeps errors prompt
  } else if (!said_complete_) {
    // Once complete, the parsers' verdict is final; saying so again would reparse per read.
    now = said_complete_ = at(b, 0) == 0x16 ? tls_complete(b) : http_complete(b);
  }
  if (now) last_full_parse_ = b.size();
  return now;
}

}  // namespace airlock::proxy
