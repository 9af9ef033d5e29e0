#include "proxy/http_head.hpp"

#include <algorithm>

#include <string_view>

namespace airlock::proxy::http_head {
namespace {

using namespace std::string_view_literals;

bool is_upper(char c) noexcept { return c >= 'A' && c <= 'Z'; }
bool is_digit(char c) noexcept { return c >= '0' && c <= '9'; }
bool is_alnum(char c) noexcept { return is_digit(c) || is_upper(c) || (c >= 'a' && c <= 'z'); }
bool is_hex(char c) noexcept { return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
// RFC 9110 5.6.2 tchar.
bool is_tchar(char c) noexcept { return is_alnum(c) || "!#$%&'*+-.^_`|~"sv.find(c) != std::string_view::npos; }
// Visible ASCII only: a target with spaces, controls or raw UTF-8 is not one we can re-send safely.
bool is_target_char(char c) noexcept { return c > 0x20 && c < 0x7f; }
// RFC 9110 5.5 field-vchar, SP, HTAB and obs-text; CR and LF are handled by the line walk.
bool is_value_char(char c) noexcept {
  const auto u = static_cast<unsigned char>(c);
  return u == '\t' || (u >= 0x20 && u != 0x7f);
}

char to_lower(char c) noexcept { return is_upper(c) ? static_cast<char>(c - 'A' + 'a') : c; }
bool iequals(std::string_view a, std::string_view b) noexcept {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (to_lower(a[i]) != to_lower(b[i])) return false;
  }
  return true;
}

std::string_view trim_ows(std::string_view s) noexcept {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// RFC 3986 reg-name: unreserved, sub-delims and %XX. DNS rules are checked later, in policy.
bool is_reg_name(std::string_view s) noexcept {
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '%') {
      if (i + 2 >= s.size() || !is_hex(s[i + 1]) || !is_hex(s[i + 2])) return false;
      i += 2;
    } else if (!is_alnum(c) && "-._~!$&'()*+,;="sv.find(c) == std::string_view::npos) {
      return false;
    }
  }
  return true;
}

// Only the alphabet: the address itself is parsed by whoever connects to it.
bool is_ipv6_literal(std::string_view s) noexcept {
  if (s.find(':') == std::string_view::npos) return false;
  for (const char c : s) {
    if (!is_hex(c) && c != ':' && c != '.') return false;
  }
  return true;
}

std::optional<std::uint16_t> parse_port(std::string_view s) noexcept {
  if (s.empty() || s.size() > 5) return std::nullopt;
  std::uint32_t value = 0;
  for (const char c : s) {
    if (!is_digit(c)) return std::nullopt;
    value = value * 10 + static_cast<std::uint32_t>(c - '0');
  }
  if (value == 0 || value > 65535) return std::nullopt;
  return static_cast<std::uint16_t>(value);
}

struct authority {
  std::string_view host;  // without brackets
  std::optional<std::uint16_t> port;
};

// Splits `name`, `name:port`, `[v6]` or `[v6]:port`; returns why it cannot.
std::optional<error> split_authority(std::string_view text, authority& out) noexcept {
  // Userinfo is how "http://allowed.example@evil.example/" fools a naive host check.
  if (text.find('@') != std::string_view::npos) return error::malformed;
  std::string_view host = text;
  std::optional<std::string_view> port;
  if (!text.empty() && text.front() == '[') {
    const auto close = text.find(']');
    if (close == std::string_view::npos) return error::malformed;
    host = text.substr(1, close - 1);
    const auto rest = text.substr(close + 1);
    if (!rest.empty()) {
      if (rest.front() != ':') return error::malformed;
      port = rest.substr(1);
    }
    if (!is_ipv6_literal(host)) return error::malformed;
  } else {
    const auto colon = text.find(':');
    if (colon != std::string_view::npos) {
      host = text.substr(0, colon);
      port = text.substr(colon + 1);
    }
    if (host.empty()) return error::missing_host;
    if (!is_reg_name(host)) return error::malformed;
  }
  if (port) {
    out.port = parse_port(*port);
    if (!out.port) return error::malformed;
  }
  out.host = host;
  return std::nullopt;
}

struct head {
  std::string_view method;
  std::string_view target;
  std::optional<std::string_view> host_header;
  std::size_t size = 0;
  bool http11 = false;
  int content_lengths = 0;
  std::optional<std::uint64_t> content_length;  // the last one's value, when it is a number
  int transfer_encodings = 0;
  std::string_view transfer_encoding;
  std::string_view upgrade;
};

// 1*DIGIT that fits 63 bits: a longer run is no length airlock will frame a body by.
std::optional<std::uint64_t> parse_length(std::string_view s) noexcept {
  if (s.empty() || s.size() > 18) return std::nullopt;
  std::uint64_t v = 0;
  for (const char c : s) {
    if (!is_digit(c)) return std::nullopt;
    v = v * 10 + static_cast<std::uint64_t>(c - '0');
  }
  return v;
}

http_head::body framing(const head& h) noexcept {
  if (h.transfer_encodings > 0) {
    const bool chunked = h.transfer_encodings == 1 && h.http11 && h.content_lengths == 0 &&
                         iequals(h.transfer_encoding, "chunked");
    return chunked ? body::chunked : body::ambiguous;
  }
  if (h.content_lengths == 0) return body::none;
  if (h.content_lengths > 1 || !h.content_length) return body::ambiguous;
  return body::length;
}

enum class match { ok, short_input, bad };

// Compares w[i..] with `literal` as far as bytes are present, advancing `i` on success.
match expect(std::string_view w, std::size_t& i, std::string_view literal) noexcept {
  for (const char c : literal) {
    if (i == w.size()) return match::short_input;
    if (w[i] != c) return match::bad;
    ++i;
  }
  return match::ok;
}

using scanned = std::variant<head, need_more, not_http, failed>;

// Walks the head as far as `w` goes. need_more means the head does not end inside `w`; every
// other outcome is final, so a caller that feeds more bytes gets the same answer.
scanned scan_head(std::string_view w) noexcept {
  head h;
  std::size_t i = 0;
  while (i < w.size() && is_upper(w[i])) {
    if (++i > max_method_size) return not_http{};
  }
  if (i == w.size()) return need_more{};
  if (i == 0 || w[i] != ' ') return not_http{};
  h.method = w.substr(0, i);

  const std::size_t target_start = ++i;
  while (i < w.size() && is_target_char(w[i])) ++i;
  if (i == w.size()) return need_more{};
  if (i == target_start || w[i] != ' ') return failed{error::malformed};
  h.target = w.substr(target_start, i - target_start);
  ++i;

  match m = expect(w, i, "HTTP/1.");
  if (m == match::ok) {
    if (i == w.size()) return need_more{};
    m = (w[i] == '0' || w[i] == '1') ? match::ok : match::bad;
    h.http11 = w[i] == '1';
    ++i;
  }
  if (m == match::ok) m = expect(w, i, "\r\n");
  if (m == match::short_input) return need_more{};
  if (m == match::bad) return failed{error::malformed};

  for (;;) {
    if (i == w.size()) return need_more{};
    if (w[i] == '\r') {
      if (i + 1 == w.size()) return need_more{};
      if (w[i + 1] != '\n') return failed{error::malformed};
      h.size = i + 2;
      return h;
    }
    // obs-fold, or whitespace before the first field: both let parsers disagree on field bounds.
    if (w[i] == ' ' || w[i] == '\t') return failed{error::malformed};
    const std::size_t name_start = i;
    while (i < w.size() && is_tchar(w[i])) ++i;
    if (i == w.size()) return need_more{};
    // Also catches "Host :" (RFC 9112 5.1 requires rejecting it) and a bare LF.
    if (i == name_start || w[i] != ':') return failed{error::malformed};
    const auto name = w.substr(name_start, i - name_start);
    const std::size_t value_start = ++i;
    while (i < w.size() && w[i] != '\r') {
      if (!is_value_char(w[i])) return failed{error::malformed};
      ++i;
    }
    if (i + 1 >= w.size()) return need_more{};
    if (w[i + 1] != '\n') return failed{error::malformed};
    const auto value = trim_ows(w.substr(value_start, i - value_start));
    i += 2;
    if (iequals(name, "host")) {
      // RFC 9112 3.2: more than one Host is rejected, even when the values agree.
      if (h.host_header) return failed{error::conflicting_host};
      h.host_header = value;
    } else if (iequals(name, "content-length")) {
      ++h.content_lengths;
      h.content_length = parse_length(value);
    } else if (iequals(name, "transfer-encoding")) {
      ++h.transfer_encodings;
      h.transfer_encoding = value;
    } else if (iequals(name, "upgrade")) {
      h.upgrade = value;
    }
  }
}

std::optional<error> find_host(const head& h, request& out) noexcept {
  authority target;
  if (h.method == "CONNECT") {
    // The tunnel goes where the target says; a Host header cannot redirect it, so it is not read.
    if (auto why = split_authority(h.target, target)) return why;
    if (!target.port) return error::malformed;
  } else if (h.target.front() == '/' || h.target == "*") {
    if (h.target == "*" && h.method != "OPTIONS") return error::malformed;
    if (!h.host_header) return error::missing_host;
    if (auto why = split_authority(*h.host_header, target)) return why;
  } else {
    const auto scheme_end = h.target.find("://");
    if (scheme_end == std::string_view::npos) return error::malformed;
    const auto scheme = h.target.substr(0, scheme_end);
    std::uint16_t default_port = 0;
    if (iequals(scheme, "http")) {
      default_port = 80;
    } else if (iequals(scheme, "https")) {
      default_port = 443;
    } else {
      return error::malformed;
    }
    const auto rest = h.target.substr(scheme_end + 3);
    if (auto why = split_authority(rest.substr(0, rest.find_first_of("/?#")), target)) return why;
    out.absolute_form = true;
    // RFC 9112 3.2.2 lets a proxy ignore Host here; we refuse instead, since a server behind us
    // may read Host and reach a name we never checked.
    if (h.host_header) {
      authority header;
      if (auto why = split_authority(*h.host_header, header)) {
        return why == error::missing_host ? error::conflicting_host : why;
      }
      if (!iequals(target.host, header.host) ||
          target.port.value_or(default_port) != header.port.value_or(default_port)) {
        return error::conflicting_host;
      }
    }
  }
  out.host.assign(target.host);
  out.port = target.port;
  return std::nullopt;
}

}  // namespace

result parse(std::span<const std::byte> bytes, std::size_t max_size) noexcept {
  const std::string_view all{reinterpret_cast<const char*>(bytes.data()), bytes.size()};
  const auto scanned_head = scan_head(all.substr(0, max_size));
  if (std::holds_alternative<need_more>(scanned_head)) {
    // The head would end past max_size, so there is no point waiting for it.
    if (all.size() >= max_size) return failed{error::too_large};
    return need_more{};
  }
  if (const auto* n = std::get_if<not_http>(&scanned_head)) return *n;
  if (const auto* f = std::get_if<failed>(&scanned_head)) return *f;

  const auto& h = std::get<head>(scanned_head);
  request out;
  if (auto why = find_host(h, out)) return failed{*why};
  out.method.assign(h.method);
  out.target.assign(h.target);
  out.head_size = h.size;
  out.body = framing(h);
  if (out.body == body::length) out.content_length = *h.content_length;
  out.upgrade.assign(h.upgrade);
  return out;
}

std::string forward_head(std::span<const std::byte> bytes) {
  const std::string_view head{reinterpret_cast<const char*>(bytes.data()), bytes.size()};
  constexpr std::string_view hop_by_hop[] = {"connection", "keep-alive", "proxy-connection", "proxy-authorization",
                                             "te",         "trailer",    "upgrade"};
  auto is_hop_by_hop = [&](std::string_view line) {
    const auto colon = line.find(':');
    if (colon == std::string_view::npos) return false;
    const auto name = line.substr(0, colon);
    for (auto h : hop_by_hop)
      if (name.size() == h.size() &&
          std::equal(name.begin(), name.end(), h.begin(), [](char a, char b) { return (a | 0x20) == b; }))
        return true;
    return false;
  };
  std::string out;
  out.reserve(head.size() + 20);
  std::size_t pos = 0;
  bool first = true;
  // parse() accepted this head: lines end in CRLF and the last line is empty.
  while (pos < head.size()) {
    auto end = head.find("\r\n", pos);
    if (end == std::string_view::npos) end = head.size();
    const auto line = head.substr(pos, end - pos);
    pos = end + 2;
    if (line.empty()) break;
    if (!first && is_hop_by_hop(line)) continue;
    first = false;
    out.append(line).append("\r\n");
  }
  out += "Connection: close\r\n\r\n";
  return out;
}

std::string origin_target(std::string_view target, bool absolute_form) {
  if (!absolute_form) return std::string(target);
  const auto scheme = target.find("://");
  const auto start = scheme == std::string_view::npos ? 0 : scheme + 3;
  const auto end = target.find_first_of("/?#", start);
  if (end == std::string_view::npos) return "/";
  if (target[end] == '/') return std::string(target.substr(end));
  if (target[end] == '?') return "/" + std::string(target.substr(end));
  return "/";
}

}  // namespace airlock::proxy::http_head
