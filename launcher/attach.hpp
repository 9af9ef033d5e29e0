#pragma once
// `airlock attach` / `airlock detach`: the gateway treatment of `airlock run` for a
// network namespace someone else made (podman, containerd, a Kubernetes pod). A veth pair
// into it ("airlock0" inside, an address from the pool), its IPv4 default route replaced by
// one through this host (the old ones are saved for detach), IPv6 disabled, and inside it
// a guard table that drops whatever does not leave through airlock0 and sends DNS to the
// gateway; here the same per-sandbox gateway table as `airlock run`. The guard holds as
// long as the workload has no CAP_NET_ADMIN in its namespace.
#include "base/result.hpp"
#include "control/session_api.hpp"
#include "launcher/state.hpp"

#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace airlock::launcher {

struct attach_options {
  std::string netns;  // path, or a name under /run/netns
  std::string policy, session_id;
  std::vector<std::string> allow;
  std::vector<std::pair<std::string, std::string>> labels;
  std::string pool{default_pool};
  std::string control;  // recorded, so detach and gc can end the session
};

// The guard table inside the attached namespace (pure; unit-tested on its text).
std::string guard_ruleset(const std::string& table, const std::string& iface, const std::string& gateway_ip,
                          const std::string& address);

// Attaches; on failure undoes every step already done. Returns the record (session id,
// addresses) on success.
base::result<sandbox_record> attach(const attach_options& o, control::session_api& daemon,
                                    const state_store& store = state_store());

// Detaches the namespace `netns` (path or name). `end_session` is called with the
// recorded control socket and session id; its failure is a warning (a restarted daemon
// has forgotten the session anyway).
base::result<sandbox_record> detach(
    const std::string& netns,
    const std::function<base::result<void>(const std::string&, const std::string&)>& end_session,
    std::vector<std::string>* warnings = nullptr, const state_store& store = state_store());

}  // namespace airlock::launcher
