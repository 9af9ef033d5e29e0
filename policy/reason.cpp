#include "policy/reason.hpp"

namespace airlock::policy {

std::string_view to_string(verdict v) noexcept {
  switch (v) {
    case verdict::allow: return "allow";
    case verdict::deny: return "deny";
    case verdict::audit_deny: return "audit-deny";
  }
  return "deny";
}

std::string_view to_string(reason r) noexcept {
  switch (r) {
    case reason::host_allowed: return "host_allowed";
    case reason::cidr_allowed: return "cidr_allowed";
    case reason::dst_mismatch: return "dst_mismatch";
    case reason::host_not_allowed: return "host_not_allowed";
    case reason::host_denied: return "host_denied";
    case reason::port_not_allowed: return "port_not_allowed";
    case reason::protocol_not_allowed: return "protocol_not_allowed";
    case reason::private_address: return "private_address";
    case reason::no_name: return "no_name";
    case reason::invalid_name: return "invalid_name";
    case reason::no_session: return "no_session";
    case reason::session_unknown: return "session_unknown";
    case reason::parse_error: return "parse_error";
    case reason::too_large: return "too_large";
    case reason::truncated: return "truncated";
    case reason::timeout: return "timeout";
    case reason::resolve_failed: return "resolve_failed";
    case reason::upstream_unreachable: return "upstream_unreachable";
    case reason::dns_type_refused: return "dns_type_refused";
    case reason::dns_malformed: return "dns_malformed";
    case reason::limit_exceeded: return "limit_exceeded";
    case reason::path_not_allowed: return "path_not_allowed";
    case reason::method_not_allowed: return "method_not_allowed";
    case reason::sni_host_mismatch: return "sni_host_mismatch";
    case reason::sni_connect_mismatch: return "sni_connect_mismatch";
    case reason::misdirected: return "misdirected";
    case reason::redirect_allowed: return "redirect_allowed";
    case reason::redirect_not_allowed: return "redirect_not_allowed";
    case reason::upstream_tls: return "upstream_tls";
    case reason::grant_allowed: return "grant_allowed";
    case reason::grant_ended: return "grant_ended";
    case reason::internal_error: return "internal_error";
  }
  return "internal_error";
}

}  // namespace airlock::policy
