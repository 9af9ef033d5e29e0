// Internals shared by the dns/wire*.cpp files; not part of the public interface.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string>

#include "dns/wire.hpp"

namespace airlock::dns::wire::detail {

// No DNS transport carries more (TCP's length prefix is 16 bits).
inline constexpr std::size_t max_message_size = 65535;
inline constexpr std::size_t max_rdata_size = 65535;  // RDLENGTH is 16 bits
inline constexpr std::size_t header_size = 12;
// Smallest encodings: root name + type + class, and root name + type, class, TTL, RDLENGTH.
inline constexpr std::size_t min_question_size = 5;
inline constexpr std::size_t min_record_size = 11;
inline constexpr std::size_t max_name_wire = 255;
inline constexpr std::size_t max_label = 63;
// A name has at most 127 labels, so a legitimate name never needs more jumps than this; the
// strictly-backwards rule already rules out loops, this bounds CPU on a long pointer chain.
inline constexpr int max_pointer_jumps = 128;

inline std::uint8_t byte_at(std::span<const std::byte> p, std::size_t i) noexcept {
  return std::to_integer<std::uint8_t>(p[i]);
}

// Big-endian reads; the caller has checked that the bytes exist.
inline std::uint16_t u16_at(std::span<const std::byte> p, std::size_t i) noexcept {
  return static_cast<std::uint16_t>((byte_at(p, i) << 8) | byte_at(p, i + 1));
}
inline std::uint32_t u32_at(std::span<const std::byte> p, std::size_t i) noexcept {
  return (std::uint32_t{u16_at(p, i)} << 16) | u16_at(p, i + 2);
}

// Appends packet bytes [from, from + n); the caller has checked that they exist.
inline void append_bytes(std::string& out, std::span<const std::byte> p, std::size_t from, std::size_t n) {
  if (n == 0) return;
  const std::size_t old = out.size();
  out.resize(old + n);
  std::memcpy(out.data() + old, p.data() + from, n);
}

inline void put_u16(std::string& out, std::uint16_t v) {
  out.push_back(static_cast<char>(v >> 8));
  out.push_back(static_cast<char>(v & 0xFF));
}
inline void put_u32(std::string& out, std::uint32_t v) {
  put_u16(out, static_cast<std::uint16_t>(v >> 16));
  put_u16(out, static_cast<std::uint16_t>(v & 0xFFFF));
}

// Decodes the possibly compressed name whose first byte is at `pos`, appending its uncompressed
// wire form to `out`. Bytes before the first pointer must lie below `end`; every pointer must
// target an offset strictly below the start of the label run that contains it. On success `pos`
// is just past the name's in-stream bytes.
std::optional<parse_error> read_name(std::span<const std::byte> packet, std::size_t& pos, std::size_t end,
                                     std::string& out) noexcept;

}  // namespace airlock::dns::wire::detail
