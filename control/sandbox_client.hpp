#pragma once
// The caller's side of `airlock run` through the daemon (control/sandbox_call.hpp): send the
// call with its descriptors, forward INT, TERM, HUP and QUIT while CMD runs, and return the
// exit status the daemon reports.
#include "base/result.hpp"
#include "control/sandbox_call.hpp"

#include <span>
#include <string>

namespace airlock::control {

// `fds`: stdin, stdout, stderr, the working directory, then call.paths paths, all opened by
// the caller. Fails (with what to do, and whether CMD ran) when the daemon cannot be reached,
// refuses, or goes away; otherwise the status `airlock run` would have returned.
base::result<int> call_sandbox(const std::string& socket_path, const sandbox_call& call, std::span<const int> fds);

}  // namespace airlock::control
