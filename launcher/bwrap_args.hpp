#pragma once
// The sandbox's filesystem and process view as bubblewrap arguments. Pure: the caller
// inspects the host (which top-level entries are symlinks, where resolv.conf really
// lives) and passes file descriptors; this only turns the spec into argv, so every
// choice here is unit-tested on the argument list.
//
// What the workload sees: the system directories read-only, a fresh /dev (null, zero,
// random, tty, pts, shm) and /proc, empty tmpfs on /tmp, /var/tmp, /run (so docker.sock,
// D-Bus and ssh-agent sockets are not there) and $HOME, the working directory (read-write
// by default), the --ro and --rw directories, and airlock's resolv.conf. New PID, IPC, UTS
// and cgroup namespaces, no capabilities (so no CAP_NET_ADMIN even as root), a new
// terminal session (so it cannot push keystrokes into the caller's terminal with
// TIOCSTI), killed with its parent.
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace airlock::launcher {

// A top-level system entry: bound read-only, or recreated as the same symlink
// (/bin -> usr/bin on merged-/usr systems).
struct system_entry {
  std::filesystem::path path;
  std::optional<std::filesystem::path> symlink_target;
};

struct bind_entry {
  std::filesystem::path source;
  std::filesystem::path target;
  bool writable = false;
};

struct fd_file {
  int fd = -1;                   // read by bwrap; the caller keeps it open (not close-on-exec) until exec
  std::filesystem::path target;  // where it appears, read-only
};

struct sandbox_spec {
  std::filesystem::path bwrap = "/usr/bin/bwrap";
  std::vector<system_entry> system;           // e.g. /usr, /etc, /bin -> usr/bin, /lib, /lib64, /opt
  std::vector<std::filesystem::path> masked;  // files covered by /dev/null (/etc/shadow, ssh host keys)
  std::filesystem::path home;                 // an empty tmpfs
  std::optional<bind_entry> workdir;          // the working directory (or its disposable copy)
  std::filesystem::path chdir;                // where CMD starts
  std::vector<bind_entry> binds;              // --ro and --rw, in the order given
  std::vector<fd_file> files;                 // resolv.conf, the CA files
  std::string hostname = "airlock";
  int status_fd = -1;                // bwrap's --json-status-fd: child pid, then CMD's exit code
  std::vector<std::string> command;  // CMD ARG...
};

// argv for execve, argv[0] being spec.bwrap. Mount order matters and is: system, /dev and
// /proc, the tmpfs directories, $HOME, the working directory, --ro/--rw, files, masks, so a
// later entry may sit inside an earlier one (a project under $HOME, ~/.gitconfig via --ro).
std::vector<std::string> bwrap_argv(const sandbox_spec& spec);

}  // namespace airlock::launcher
