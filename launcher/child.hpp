#pragma once
// The sandboxed process from the outside: start bubblewrap inside the sandbox's cgroups and
// network namespace, forward signals to the workload, enforce the timeout, and collect
// CMD's exit status (bubblewrap's --json-status-fd reports its pid-1 and CMD's exit code).
#include "base/result.hpp"
#include "base/unique_fd.hpp"

#include <signal.h>
#include <sys/types.h>

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace airlock::launcher {

// Who the child becomes before exec, when airlock makes a sandbox for another user.
struct credentials {
  uid_t uid = 0;
  gid_t gid = 0;
  std::vector<gid_t> groups;  // supplementary
};

struct child_spec {
  std::string executable;  // bwrap
  std::vector<std::string> argv, envp;
  std::vector<std::string> cgroup_procs;  // joined (by writing "0") before exec
  int netns_fd = -1;                      // entered before exec
  std::optional<credentials> run_as;      // taken after the cgroups and the namespace
  std::optional<mode_t> umask;            // CMD's, when not airlock's own
  std::vector<int> inherit_fds;           // kept open across exec (close-on-exec cleared in the child)
};

// Blocks the signals airlock handles itself (INT, TERM, HUP, QUIT, CHLD) in the calling
// thread, which must be the only thread yet (threads started later inherit the mask), and
// returns a signalfd for them. Until then a Ctrl-C during setup would kill airlock half-way.
// SIGPIPE is ignored from here on (`airlock run ... 2>&1 | head` must still tear down);
// the child gets it back as it was.
base::result<base::unique_fd> take_signals();

// Starts the child: its own process group (so a terminal's Ctrl-C reaches airlock, which
// forwards it), the cgroups, the namespace, the caller's identity when asked, then exec. Failures before exec come back
// as an error naming the step, and no process is left.
base::result<pid_t> spawn_child(const child_spec& spec);

struct supervise_options {
  int signal_fd = -1;
  int status_fd = -1;  // read end of bwrap's --json-status-fd
  std::optional<std::chrono::milliseconds> timeout;
  std::chrono::milliseconds grace{2000};  // after the timeout's SIGTERM, before SIGKILL
};

struct child_outcome {
  std::optional<int> cmd_status;  // CMD's exit status (128+N when killed by signal N)
  int bwrap_status = 0;           // bwrap's own, from waitpid (128+N when killed)
  bool timed_out = false;
  std::optional<int> signal_received;  // the first INT/TERM/HUP/QUIT airlock forwarded
};

// Waits until bubblewrap has exited and the sandbox's pid namespace is empty: forwards
// INT, TERM, HUP and QUIT to every process of the workload (a second one kills it all),
// and on timeout sends TERM, then KILL after the grace period.
child_outcome supervise(pid_t child, const supervise_options& options);

}  // namespace airlock::launcher
