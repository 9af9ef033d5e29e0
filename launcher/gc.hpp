#pragma once
// `airlock gc`: removes what an `airlock run` left behind when it could not clean up
// itself (killed with SIGKILL, a crash, a power cut of the process): its cgroups and
// everything in them, the nft table and veth in the gateway namespace, the namespace pin,
// the disposable copy, and the session in the daemon. Only records whose owner is dead are
// touched; a running sandbox is never disturbed. Attachments (`airlock attach`) are
// removed only when their namespace is gone; otherwise that is `airlock detach`'s job.
#include "base/result.hpp"
#include "launcher/state.hpp"

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace airlock::launcher {

struct gc_report {
  std::vector<std::string> removed;  // one line per sandbox cleaned, naming what went
  std::vector<std::string> kept;     // still owned by a running airlock
  std::vector<std::string> errors;
};

// Ends a session in the daemon at `control` (the app supplies it: the launcher does not
// talk to daemons itself).
using session_remover = std::function<base::result<void>(const std::string& control, const std::string& session)>;

gc_report collect_garbage(const state_store& store, const session_remover& end_session, bool dry_run = false);

// The gateway side of one record: its nft table and veth, in the namespace they were
// made in (entered through /run/netns when it is not the current one). Used by gc and
// detach. Appends what was removed to `removed`.
base::result<void> remove_gateway_side(const sandbox_record& r, std::vector<std::string>& removed);

// True when `name` is safe to hand to nft or netlink (what airlock itself generates).
bool safe_resource_name(const std::string& name);

}  // namespace airlock::launcher
