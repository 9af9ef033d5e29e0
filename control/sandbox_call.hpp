#pragma once
// `airlock run` for a user who is not root: the daemon makes the sandbox, and CMD runs as
// that user. Three messages on the daemon's sandbox socket (a SOCK_SEQPACKET unix socket,
// one JSON object per packet) and one hand-over inside the daemon:
//
//   caller -> daemon  sandbox_call      the options and CMD as typed, and the environment;
//                                       rides with descriptors: stdin, stdout, stderr, the
//                                       working directory (O_PATH), then each --ro/--rw path
//                                       (O_PATH), so what the sandbox may show is what the
//                                       caller could open
//   caller -> daemon  {"signal": N}     a signal the caller received, for CMD
//   daemon -> caller  {"exit": N}       airlock run's exit status; or {"error": TEXT} when
//                                       the daemon refused before starting anything
//   daemon -> helper  sandbox_order     the call plus who made it (SO_PEERCRED, never the
//                                       call's word), for `airlock run --order-fd FD`, the
//                                       root process that makes the sandbox
//
// Pure functions over text; the socket and descriptors are the caller's and the daemon's.
#include "base/result.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace airlock::control {

inline constexpr std::string_view default_sandbox_socket = "/run/airlock/sandbox.sock";

// Descriptors the call carries before its paths: stdin, stdout, stderr, working directory.
inline constexpr std::size_t call_fixed_fds = 4;
// Bounds: the packet (arguments and environment), and the --ro/--rw paths with descriptors.
inline constexpr std::size_t max_call_bytes = 256 * 1024;
inline constexpr std::size_t max_call_paths = 32;

struct sandbox_call {
  std::vector<std::string> args;  // what followed `airlock run`
  std::vector<std::string> env;   // NAME=VALUE, the caller's whole environment
  std::size_t paths = 0;          // descriptors after the working directory's
  std::uint32_t umask = 022;      // the caller's, for CMD (the service's own is stricter)
};
std::string encode(const sandbox_call& call);
base::result<sandbox_call> decode_call(std::string_view text);

// What travels after the call. Each decoder returns nothing for any other message.
std::string signal_message(int signal);
std::optional<int> decode_signal(std::string_view text);
std::string exit_message(int status);
std::string error_message(std::string_view why);
struct call_outcome {
  std::optional<int> exit_status;
  std::string error;  // the daemon's refusal, when exit_status is empty
};
std::optional<call_outcome> decode_outcome(std::string_view text);

// The call as the daemon hands it to the helper: descriptors 0-2 are the caller's, the
// working directory is `first_fd`, the paths follow it in order.
struct sandbox_order {
  sandbox_call call;
  std::uint32_t uid = 0, gid = 0;
  std::vector<std::uint32_t> groups;  // supplementary, from SO_PEERGROUPS
  std::string user;                   // the uid's name, or the number when it has none
  std::string control;                // the daemon's control socket
  std::string state_dir, pool;        // the daemon's sandboxes: section; empty: run's defaults
  int first_fd = 4;
};
std::string encode(const sandbox_order& order);
base::result<sandbox_order> decode_order(std::string_view text);

}  // namespace airlock::control
