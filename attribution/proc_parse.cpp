#include "attribution/proc_parse.hpp"

#include <charconv>
#include <limits>

namespace airlock::attribution::proc {
namespace {

std::string_view as_text(std::span<const std::byte> bytes) noexcept {
  return {reinterpret_cast<const char*>(bytes.data()), bytes.size()};
}

// The next space-separated field of `rest` (advancing it); empty when there is none.
std::string_view next_field(std::string_view& rest) noexcept {
  while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
  const auto end = rest.find(' ');
  const auto field = rest.substr(0, end);
  rest.remove_prefix(field.size());
  return field;
}

template <typename Int>
bool to_number(std::string_view text, Int& out) noexcept {
  if (text.empty()) return false;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && ptr == text.data() + text.size();
}

}  // namespace

std::string printable(std::string_view raw, std::size_t cap) {
  static constexpr char hex[] = "0123456789abcdef";
  constexpr std::string_view ellipsis = "...";
  std::string out;
  out.reserve(raw.size() < cap ? raw.size() : cap);
  // Where the text is cut if it turns out not to fit: the last escape boundary that still
  // leaves room for the ellipsis.
  std::size_t cut = std::string::npos;
  const std::size_t room = cap >= ellipsis.size() ? cap - ellipsis.size() : cap;  // tiny cap: cut bare
  for (char ch : raw) {
    const auto c = static_cast<unsigned char>(ch);
    char piece[4];
    std::size_t n = 0;
    if (c == '\\') {
      piece[n++] = '\\';
      piece[n++] = '\\';
    } else if (c >= 0x20 && c < 0x7f) {
      piece[n++] = ch;
    } else {
      piece[n++] = '\\';
      piece[n++] = 'x';
      piece[n++] = hex[c >> 4];
      piece[n++] = hex[c & 0xf];
    }
    if (out.size() + n > cap) {
      out.resize(cut == std::string::npos ? out.size() : cut);
      if (out.size() + ellipsis.size() <= cap) out += ellipsis;
      return out;
    }
    if (cut == std::string::npos && out.size() + n > room) cut = out.size();
    out.append(piece, n);
  }
  return out;
}

std::string parse_cmdline(std::span<const std::byte> bytes, std::size_t cap) {
  std::string_view text = as_text(bytes);
  while (!text.empty() && text.back() == '\0') text.remove_suffix(1);
  // Bytes past what can show after escaping (each input byte gives at least one output byte)
  // cannot change the result, so a huge argv costs no more than a short one.
  std::string joined(text.substr(0, cap + 1));
  for (char& c : joined)
    if (c == '\0') c = ' ';
  return printable(joined, cap);
}

boost::system::result<stat_fields, stat_error> parse_stat(std::span<const std::byte> bytes) noexcept {
  const std::string_view text = as_text(bytes);
  const auto open = text.find('(');
  const auto close = text.rfind(')');
  if (open == std::string_view::npos || close == std::string_view::npos || close < open) return stat_error::no_comm;
  stat_fields out;
  std::string_view pid_text = text.substr(0, open);
  while (!pid_text.empty() && pid_text.back() == ' ') pid_text.remove_suffix(1);
  if (!to_number(pid_text, out.pid) || out.pid <= 0) return stat_error::bad_field;

  // Fields after the comm, numbered as in proc(5): 3 state, 4 ppid, ..., 22 starttime.
  std::string_view rest = text.substr(close + 1);
  while (!rest.empty() && (rest.back() == '\n' || rest.back() == '\0')) rest.remove_suffix(1);
  const std::string_view state = next_field(rest);
  if (state.size() != 1) return stat_error::bad_field;
  out.state = state.front();
  if (!to_number(next_field(rest), out.ppid) || out.ppid < 0) return stat_error::bad_field;
  for (int field = 5; field < 22; ++field) {
    if (next_field(rest).empty()) return stat_error::bad_field;
  }
  if (!to_number(next_field(rest), out.start_time)) return stat_error::bad_field;

  try {
    out.comm = printable(text.substr(open + 1, close - open - 1), max_comm);
  } catch (...) {
    return stat_error::bad_field;  // allocation failure: the caller treats it as unreadable
  }
  return out;
}

}  // namespace airlock::attribution::proc
