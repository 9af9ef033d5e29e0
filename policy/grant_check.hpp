#pragma once
// Where a decision meets the session's grants (policy/session_grants.hpp): a decision that
// lacked a rule for the name (host_not_allowed) or for its port (port_not_allowed) is
// allowed by a live grant that covers them, with reason grant_allowed and the grant as
// its rule. Everything else stands: a deny rule, a protocol the port does not carry, a
// special address (judged later, on the addresses), inspection. The DNS server asks
// without taking (resolving is not the use); a connection takes.
#include "policy/session_grants.hpp"
#include "policy/snapshot.hpp"

#include <optional>
#include <string>
#include <string_view>

namespace airlock::policy {

// A denial a grant can lift: for want of a rule for the name or its port. Also what an
// approver is asked about (record/approval_desk.hpp).
inline bool grantable(reason r) noexcept { return r == reason::host_not_allowed || r == reason::port_not_allowed; }

inline std::optional<session_grants::use> check_grants(session_grants* grants, const decision& d,
                                                       std::string_view session, const domain_name& name, bool consume,
                                                       std::uint16_t port, wire spoken) {
  if (grants == nullptr || !grantable(d.reason)) return std::nullopt;
  const auto now = session_grants::clock::now();
  return consume ? grants->take(session, name, port, spoken, now) : grants->peek(session, name, port, spoken, now);
}

// `d` as the grant makes it; `rule` keeps the grant's rule text alive for d.rule.
inline void apply_grant(const std::optional<session_grants::use>& u, decision& d, std::string& rule) {
  if (!u) return;
  rule = u->rule;
  d = {verdict::allow, reason::grant_allowed, rule, false, u->protocol};
}

}  // namespace airlock::policy
