#pragma once
// `airlock run -- CMD`, top to bottom: reserve an address, make the cgroups, the network
// namespace and its veth, reach a daemon, install the gateway's nft table, register the
// session, start CMD under bubblewrap, wait, and take every piece down again, in reverse,
// whatever happened. Any step that fails stops the run before CMD starts and names itself.
#include "base/result.hpp"
#include "control/session_api.hpp"
#include "launcher/address_pool.hpp"
#include "launcher/cgroup.hpp"
#include "launcher/state.hpp"

#include <boost/asio/ip/address_v4.hpp>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace airlock::launcher {

// airlock's own exit statuses (otherwise CMD's, 128+N when a signal N ended it).
inline constexpr int exit_timed_out = 124;       // --timeout expired (as timeout(1))
inline constexpr int exit_setup_failed = 125;    // the sandbox could not be set up (as env(1), docker)
inline constexpr int exit_not_executable = 126;  // CMD exists but cannot be executed
inline constexpr int exit_not_found = 127;       // CMD was not found

// Where CMD finds airlock's inspection CA, and the system roots with it, when the daemon
// inspects some rule's TLS (control::listener_ports::inspection_ca).
inline constexpr std::string_view sandbox_ca_file = "/run/airlock/ca.crt";
inline constexpr std::string_view sandbox_ca_bundle = "/run/airlock/ca-bundle.crt";

enum class cwd_mode { read_write, read_only, copy, none };

// The user a daemon makes the sandbox for (`airlock run` by someone who is not root; the
// daemon learnt who from the socket, control/sandbox_call.hpp). CMD runs as that user, gets
// that user's environment, and sees only a working directory and --ro/--rw paths that the
// user opened: airlock's own privileges never reach a file the user could not.
struct caller_identity {
  std::uint32_t uid = 0, gid = 0;
  std::vector<std::uint32_t> groups;
  std::string user;
  std::vector<std::string> env;
  std::uint32_t umask = 022;
  int cwd_fd = -1;
  std::vector<int> path_fds;
};

struct run_options {
  std::vector<std::string> command;  // CMD ARG...
  // The session.
  std::string policy;
  std::string session_id;
  std::vector<std::string> allow;
  std::vector<std::pair<std::string, std::string>> labels;
  // The filesystem.
  std::vector<std::filesystem::path> ro, rw;
  cwd_mode cwd = cwd_mode::read_write;
  // Resources.
  cgroup_limits limits;
  std::optional<std::chrono::milliseconds> timeout;
  // The environment.
  std::vector<std::string> env;
  // Plumbing.
  std::string pool{default_pool};
  std::filesystem::path state_dir{default_state_dir};
  std::filesystem::path bwrap{"/usr/bin/bwrap"};
  std::optional<caller_identity> caller;  // empty: CMD runs as whoever runs airlock
};

// A daemon for the sandbox, and how to name it in airlock's lines ("the daemon at
// /run/airlock/control.sock", "an embedded daemon").
struct daemon_link {
  std::unique_ptr<control::session_api> api;
  std::string description;
  std::string control_socket;  // empty for an embedded daemon; recorded so `airlock gc` can end the session
};
// Where the daemon comes from: a running one, asked while the namespace is being made,
// or, when none answers, an embedded one, started once the gateway address exists (it
// listens there).
struct daemon_source {
  std::function<std::optional<daemon_link>()> running;  // nothing: none answers (the caller says so)
  std::function<base::result<daemon_link>(const boost::asio::ip::address_v4& gateway)> embedded;
};

// Runs CMD in a fresh sandbox; returns airlock's exit status.
int run_sandbox(const run_options& options, const daemon_source& daemons);

}  // namespace airlock::launcher
