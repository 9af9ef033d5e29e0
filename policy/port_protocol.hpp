#pragma once
// What may be spoken on an allowed port, and what a connection's first bytes spoke. A rule
// that allows github.com on 443 allows TLS naming github.com there, not an ssh session to
// the same address: the port's protocol is part of the allowance.
#include <cstdint>
#include <optional>
#include <string_view>

namespace airlock::policy {

// What an allowed port carries (a rule's `ports:` entry).
enum class port_protocol : std::uint8_t {
  tls,   // a TLS ClientHello whose SNI the rule allows
  http,  // an HTTP/1 request head whose Host the rule allows
  any,   // any bytes: a name they carry is judged; else the address must be one this
         // session's DNS answered for the rule's name (or a cidr rule's)
};

// 443 and the other ports where TLS is spoken from the first byte: tls; 80: http; every
// other port: any (ssh on 22, databases, ...).
port_protocol default_protocol(std::uint16_t port) noexcept;
std::string_view to_string(port_protocol p) noexcept;
std::optional<port_protocol> parse_port_protocol(std::string_view text) noexcept;

// A port whose protocol was written out (`{port: 8443, protocol: any}`).
struct port_protocol_entry {
  std::uint16_t port = 0;
  port_protocol protocol = port_protocol::any;
  bool operator==(const port_protocol_entry&) const = default;
};

// What a connection's first bytes were, as a port's protocol judges them. A TLS hello
// without a server name, or an HTTP request without a host, names nothing: the judge asks
// about it as `opaque` unless a cidr rule (which allows by address) decides.
// `unjudged`: the question is about a name and port alone (DNS, a redirect's target).
enum class wire : std::uint8_t { unjudged, tls, http, opaque };

std::string_view to_string(wire w) noexcept;

constexpr bool admits(port_protocol p, wire w) noexcept {
  switch (p) {
    case port_protocol::tls: return w == wire::tls || w == wire::unjudged;
    case port_protocol::http: return w == wire::http || w == wire::unjudged;
    case port_protocol::any: return true;
  }
  return false;
}

}  // namespace airlock::policy
