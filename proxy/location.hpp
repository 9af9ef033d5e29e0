#pragma once
// Where a redirect points: the host and port of a Location header value (RFC 9110
// 10.2.2, a URI reference). Pure; a relative reference (no authority) stays on the same
// host and yields nothing.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace airlock::proxy {

struct location_target {
  std::string host;                   // as written, without [] for IPv6 and without userinfo
  std::optional<std::uint16_t> port;  // when the reference gives one
  bool has_scheme = false;            // "//host/..." has none: it keeps the current scheme
  bool https = false;                 // the scheme was https (default port 443, else 80)
};

// The authority of `value` when it has one ("https://h/x", "//h:8080/x"); nullopt for a
// relative reference, and for an authority that does not parse (then the client cannot
// follow it either).
std::optional<location_target> location_host(std::string_view value) noexcept;

}  // namespace airlock::proxy
