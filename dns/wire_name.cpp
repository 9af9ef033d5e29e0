// Domain names: decompression, presentation text in both directions, case-insensitive compare.
#include <array>
#include <cstring>

#include "dns/wire.hpp"
#include "dns/wire_detail.hpp"

namespace airlock::dns::wire {
namespace {

std::uint8_t ascii_lower(std::uint8_t c) noexcept {
  return (c >= 'A' && c <= 'Z') ? static_cast<std::uint8_t>(c + ('a' - 'A')) : c;
}

bool is_digit(char c) noexcept { return c >= '0' && c <= '9'; }

void append_escaped(std::string& out, std::uint8_t c) {
  if (c == '.' || c == '\\') {
    out.push_back('\\');
    out.push_back(static_cast<char>(c));
  } else if (c < 0x21 || c > 0x7e) {
    out.push_back('\\');
    out.push_back(static_cast<char>('0' + c / 100));
    out.push_back(static_cast<char>('0' + (c / 10) % 10));
    out.push_back(static_cast<char>('0' + c % 10));
  } else {
    out.push_back(static_cast<char>(c));
  }
}

}  // namespace

std::string name::to_text() const {
  std::string out;
  std::size_t i = 0;
  // Walks defensively: `wire` is a public field, so a hand-made name may be malformed.
  while (i < wire.size()) {
    const auto len = static_cast<std::uint8_t>(wire[i]);
    if (len == 0 || len > detail::max_label) break;
    if (!out.empty()) out.push_back('.');
    ++i;
    for (std::size_t k = 0; k < len && i < wire.size(); ++k, ++i) {
      append_escaped(out, static_cast<std::uint8_t>(wire[i]));
    }
  }
  if (out.empty()) out = ".";
  return out;
}

bool name::equals_ignore_case(const name& other) const noexcept {
  if (wire.size() != other.wire.size()) return false;
  // Length bytes are <= 63, below 'A', so lowering every byte leaves them intact.
  for (std::size_t i = 0; i < wire.size(); ++i) {
    if (ascii_lower(static_cast<std::uint8_t>(wire[i])) != ascii_lower(static_cast<std::uint8_t>(other.wire[i]))) {
      return false;
    }
  }
  return true;
}

boost::system::result<name, parse_error> name_from_text(std::string_view text) noexcept {
  if (text.empty()) return parse_error::bad_name;
  name result;
  if (text == ".") return result;
  std::string& wire = result.wire;
  wire.clear();
  std::string label;
  const auto flush = [&]() noexcept {
    // +2: this label's length byte and the root terminator that must still fit.
    if (label.empty() || wire.size() + label.size() + 2 > detail::max_name_wire) return false;
    wire.push_back(static_cast<char>(label.size()));
    wire += label;
    label.clear();
    return true;
  };
  std::size_t i = 0;
  while (i < text.size()) {
    const char c = text[i];
    if (c == '.') {
      if (!flush()) return parse_error::bad_name;
      ++i;
      continue;
    }
    if (c != '\\') {
      label.push_back(c);
      ++i;
    } else if (i + 1 >= text.size()) {
      return parse_error::bad_name;
    } else if (!is_digit(text[i + 1])) {
      label.push_back(text[i + 1]);
      i += 2;
    } else {
      if (i + 3 >= text.size() || !is_digit(text[i + 2]) || !is_digit(text[i + 3])) {
        return parse_error::bad_name;
      }
      const int v = (text[i + 1] - '0') * 100 + (text[i + 2] - '0') * 10 + (text[i + 3] - '0');
      if (v > 255) return parse_error::bad_name;
      label.push_back(static_cast<char>(v));
      i += 4;
    }
    if (label.size() > detail::max_label) return parse_error::bad_name;
  }
  // Text without a trailing dot leaves its last label pending.
  if (!label.empty() && !flush()) return parse_error::bad_name;
  wire.push_back('\0');
  return result;
}

namespace detail {

std::optional<parse_error> read_name(std::span<const std::byte> packet, std::size_t& pos, std::size_t end,
                                     std::string& out) noexcept {
  // Decoded on the stack and appended once: a 64 KiB answer can hold thousands of names.
  std::array<char, max_name_wire> buf;
  std::size_t decoded = 0;
  std::size_t cur = pos;
  std::size_t run_start = pos;        // pointers must land strictly below this
  std::optional<std::size_t> resume;  // where the caller continues once we have jumped
  int jumps = 0;
  for (;;) {
    if (cur >= end) return parse_error::bad_name;  // ran out before the root label
    const std::uint8_t len = byte_at(packet, cur);
    switch (len & 0xC0) {
      case 0x00:
        if (len == 0) {
          buf[decoded++] = '\0';
          out.append(buf.data(), decoded);
          pos = resume.value_or(cur + 1);
          return std::nullopt;
        }
        if (len > end - cur - 1) return parse_error::bad_name;
        // +2: this length byte and the terminator that must still fit.
        if (decoded + len + 2 > max_name_wire) return parse_error::bad_name;
        std::memcpy(buf.data() + decoded, packet.data() + cur, std::size_t{len} + 1);
        decoded += std::size_t{len} + 1;
        cur += std::size_t{len} + 1;
        break;
      case 0xC0: {
        if (cur + 1 >= end) return parse_error::bad_pointer;
        const std::size_t target = std::size_t{u16_at(packet, cur)} & 0x3FFF;
        if (target >= run_start || ++jumps > max_pointer_jumps) return parse_error::bad_pointer;
        if (!resume) resume = cur + 2;
        run_start = target;
        cur = target;
        // Earlier bytes may be read up to the end of the packet (a pointer can target a name
        // inside an earlier RDATA); only the first run is confined to the caller's field.
        end = packet.size();
        break;
      }
      default:  // 0x40 (extended label, deprecated by RFC 6891) and 0x80 (reserved)
        return parse_error::bad_name;
    }
  }
}

}  // namespace detail
}  // namespace airlock::dns::wire
