#include "policy/port_protocol.hpp"

namespace airlock::policy {

port_protocol default_protocol(std::uint16_t port) noexcept {
  switch (port) {
    // Implicit TLS from the first byte: https, smtps/submissions, ldaps, DNS over TLS,
    // ftps control, imaps, pop3s, sips, the Kubernetes API, the common https alternative.
    case 443:
    case 465:
    case 636:
    case 853:
    case 990:
    case 993:
    case 995:
    case 5061:
    case 6443:
    case 8443: return port_protocol::tls;
    case 80: return port_protocol::http;
    default: return port_protocol::any;
  }
}

std::string_view to_string(port_protocol p) noexcept {
  switch (p) {
    case port_protocol::tls: return "tls";
    case port_protocol::http: return "http";
    case port_protocol::any: return "any";
  }
  return "any";
}

std::optional<port_protocol> parse_port_protocol(std::string_view text) noexcept {
  for (auto p : {port_protocol::tls, port_protocol::http, port_protocol::any})
    if (text == to_string(p)) return p;
  return std::nullopt;
}

std::string_view to_string(wire w) noexcept {
  switch (w) {
    case wire::unjudged: return "unjudged";
    case wire::tls: return "tls";
    case wire::http: return "http";
    case wire::opaque: return "opaque";
  }
  return "opaque";
}

}  // namespace airlock::policy
