#pragma once
// Private to daemon/session_registry*.cpp: what its files call of each other. One file per job:
//   session_registry.cpp           the sessions: configured ones (apply), runtime ones added,
//                                  removed and given a context, listed
//   session_registry_policies.cpp  runtime allowances as a derived policy, compiled and published
//   session_registry_state.cpp     the runtime sessions on disk: restored at start, saved on change
//   session_registry_index.cpp     the index a decision line reads, and the decision sink itself
#include "daemon/session_registry.hpp"
#include "policy/config.hpp"

#include <string>
#include <vector>

namespace airlock::daemon {

// The name of the policy a runtime session with allowances gets (metrics::runtime_policy_prefix + id).
std::string derived_policy_name(const std::string& id);

// "HOST[:PORT]" allowances as rules: a name or "*.suffix" on the given port (or the
// default 80 and 443), an address as a /32 or /128 cidr rule.
registry_result<std::vector<policy::rule_config>> allowances(const std::vector<std::string>& texts,
                                                             const std::string& id);

}  // namespace airlock::daemon
