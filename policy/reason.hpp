#pragma once
// The stable codes every decision carries. Logs, metrics labels and `airlock explain`
// all print them through to_string(), so the spelling lives in one table (reason.cpp).
#include <cstdint>
#include <string_view>

namespace airlock::policy {

enum class verdict : std::uint8_t { allow, deny, audit_deny };

enum class reason : std::uint8_t {
  host_allowed,          // an allow rule matched the name
  cidr_allowed,          // an allow rule matched the address
  dst_mismatch,          // allowed, but the client aimed at an address airlock did not resolve
  host_not_allowed,      // no allow rule matched (default deny)
  host_denied,           // a deny rule matched
  port_not_allowed,      // the name is allowed, but not on this port
  protocol_not_allowed,  // the name and port are allowed, but not what the bytes speak (ssh on a TLS port)
  private_address,       // the only addresses are special ones (loopback, RFC 1918, metadata, ...)
  no_name,               // the connection carried no name (no SNI, no Host)
  invalid_name,          // the name is not a valid hostname
  no_session,            // the source address belongs to no session and there is no default policy
  session_unknown,       // a session registered at run time holds the source, under a policy this snapshot lacks
  parse_error,           // the client's first bytes did not parse
  too_large,             // ClientHello or request head over its cap
  truncated,             // the client closed before its first message was complete
  timeout,               // the client did not send a complete first message in time
  resolve_failed,        // airlock's own resolution of an allowed name failed
  upstream_unreachable,  // no resolved address accepted the connection
  dns_type_refused,      // query type refused (ANY and the configured list)
  dns_malformed,         // the query did not parse
  limit_exceeded,        // a per-session budget (query rate, ...) is spent
  path_not_allowed,      // inspected request: the name is allowed, but no rule's paths: admit the path
  method_not_allowed,    // inspected request: a rule admits the path, but not with this method
  sni_host_mismatch,     // inspected connection: the Host header names another host than the SNI
  sni_connect_mismatch,  // a CONNECT tunnel's first message (SNI, Host) names another host than the CONNECT
  misdirected,           // a kept-alive inspected connection asked for another name (answered 421)
  redirect_allowed,      // allowed by a one-shot redirect allowance (policy `redirects:`)
  redirect_not_allowed,  // the host was reached by a redirect no `redirects:` entry allows
  upstream_tls,          // inspected connection: the origin's certificate failed verification
  grant_allowed,         // allowed by a grant the session was given at run time (control API)
  grant_ended,           // a connection a grant let through, cut because the grant ended
  internal_error,        // a bug: logged so it is never silent
};

std::string_view to_string(verdict v) noexcept;
std::string_view to_string(reason r) noexcept;

}  // namespace airlock::policy
