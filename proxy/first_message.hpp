#pragma once
// Says, cheaply and incrementally, when the bytes read so far may hold a whole first
// message: a TLS ClientHello (the handshake length is known from its header, and records
// are walked once) or an HTTP request head (CRLFCRLF, searched once). The sniffer runs the
// full parsers only then, and when the buffer has doubled since their last run, so a
// client dribbling one byte per segment costs O(n) in all, not a full parse per byte.
#include <array>
#include <cstddef>
#include <span>

namespace airlock::proxy {

class first_message_tracker {
 public:
  // Feeds everything read so far (the same growing buffer each time). True when a full
  // parse may now reach a verdict it could not reach before.
  bool maybe_complete(std::span<const std::byte> bytes) noexcept;

 private:
  bool tls_complete(std::span<const std::byte> bytes) noexcept;
  bool http_complete(std::span<const std::byte> bytes) noexcept;

  std::size_t last_full_parse_ = 0;  // buffer size at the last "true"
  bool said_complete_ = false;
  // TLS framing
  std::size_t next_record_ = 0;      // offset of the next record header not yet walked
  std::size_t handshake_bytes_ = 0;  // handshake payload seen in whole records
  std::array<unsigned char, 4> handshake_header_{};
  // HTTP framing
  std::size_t searched_ = 0;  // bytes already searched for CRLFCRLF
};

}  // namespace airlock::proxy
