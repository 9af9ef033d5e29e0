#pragma once
// Where a decision meets the session's redirect allowances (policy/redirect_grants.hpp):
// a name denied only for want of an allow rule is allowed by a live grant, or, when a
// refused redirect sent the client there, denied as redirect_not_allowed. The DNS server
// looks (the query is not the use), the proxy takes (the connection is).
#include "policy/redirect_grants.hpp"
#include "policy/snapshot.hpp"

#include <string>
#include <string_view>

namespace airlock::policy {

struct redirect_outcome {
  enum class kind { none, granted, refused };
  kind what = kind::none;
  std::string from_host;                        // the host whose redirect this was
  std::string rule;                             // granted: the redirects: entry, "FILE:LINE"
  port_protocol protocol = port_protocol::any;  // granted: what the redirect's scheme speaks
};

// `port`: the connection's (0 for DNS, which any port's grant lets resolve); `spoken`: what
// its first bytes spoke (unjudged for DNS, and for a CONNECT whose tunnel is judged next).
inline redirect_outcome check_redirects(redirect_grants* grants, const decision& d, std::string_view session,
                                        const domain_name& name, bool consume, std::uint16_t port = 0,
                                        wire spoken = wire::unjudged) {
  if (grants == nullptr || d.reason != reason::host_not_allowed) return {};
  const auto now = redirect_grants::clock::now();
  if (auto g = consume ? grants->take(session, name, now, port, spoken) : grants->peek(session, name, now))
    return {redirect_outcome::kind::granted, std::move(g->from_host), std::move(g->rule), g->protocol};
  if (auto from = grants->refused_from(session, name, now))
    return {redirect_outcome::kind::refused, std::move(*from), {}};
  return {};
}

// `d` as the outcome makes it; `rule` keeps the granted rule's text alive for d.rule.
inline void apply_redirect(const redirect_outcome& r, decision& d, std::string& rule) {
  if (r.what == redirect_outcome::kind::granted) {
    rule = r.rule;
    d = {verdict::allow, reason::redirect_allowed, rule, false, r.protocol};
  } else if (r.what == redirect_outcome::kind::refused) {
    d.reason = reason::redirect_not_allowed;
  }
}

}  // namespace airlock::policy
