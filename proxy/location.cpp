#include "proxy/location.hpp"

#include <cctype>

namespace airlock::proxy {

std::optional<location_target> location_host(std::string_view v) noexcept {
  try {
    location_target out;
    // Leading and trailing whitespace is not part of a field value.
    while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
    while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.remove_suffix(1);
    // scheme ":" (RFC 3986 3.1): ALPHA *( ALPHA / DIGIT / "+" / "-" / "." )
    std::size_t i = 0;
    if (!v.empty() && std::isalpha(static_cast<unsigned char>(v[0]))) {
      while (i < v.size() &&
             (std::isalnum(static_cast<unsigned char>(v[i])) || v[i] == '+' || v[i] == '-' || v[i] == '.'))
        ++i;
      if (i < v.size() && v[i] == ':') {
        std::string scheme;
        for (char c : v.substr(0, i)) scheme += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        out.has_scheme = true;
        out.https = scheme == "https";
        v.remove_prefix(i + 1);
      }
    }
    if (!v.starts_with("//")) return std::nullopt;  // no authority: same host
    v.remove_prefix(2);
    const auto end = v.find_first_of("/?#");
    std::string_view authority = v.substr(0, end);
    if (const auto at = authority.rfind('@'); at != std::string_view::npos) authority.remove_prefix(at + 1);
    std::string_view host = authority, port;
    if (authority.starts_with('[')) {
      const auto close = authority.find(']');
      if (close == std::string_view::npos) return std::nullopt;
      host = authority.substr(1, close - 1);
      const auto rest = authority.substr(close + 1);
      if (!rest.empty()) {
        if (rest[0] != ':') return std::nullopt;
        port = rest.substr(1);
      }
    } else if (const auto colon = authority.rfind(':'); colon != std::string_view::npos) {
      host = authority.substr(0, colon);
      port = authority.substr(colon + 1);
    }
    if (host.empty()) return std::nullopt;
    if (!port.empty()) {
      unsigned value = 0;
      for (char c : port) {
        if (!std::isdigit(static_cast<unsigned char>(c))) return std::nullopt;
        value = value * 10 + static_cast<unsigned>(c - '0');
        if (value > 65535) return std::nullopt;
      }
      if (value == 0) return std::nullopt;
      out.port = static_cast<std::uint16_t>(value);
    }
    out.host = std::string(host);
    return out;
  } catch (...) {
    return std::nullopt;  // allocation failure: no redirect recorded, the client's follow-up is judged as usual
  }
}

}  // namespace airlock::proxy
