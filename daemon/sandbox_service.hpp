#pragma once
// `airlock run` for users who are not root (control/sandbox_call.hpp has the wire): the
// daemon's sandbox socket, 0660 to listen.socket_group. Each call starts this binary again as
// the helper `airlock run --order-fd 3`, as root, in its own session, with the caller's
// stdin, stdout and stderr, in the caller's working directory (entered through the caller's
// descriptor); the helper makes the sandbox as a root `airlock run` would, registers its
// session on the control socket, and runs CMD as the caller. Who the caller is comes from
// the socket (SO_PEERCRED, SO_PEERGROUPS), never from the call. The helper's environment is
// airlock's own, minimal: the caller's travels in the order, for CMD only (an LD_PRELOAD of
// the caller's must never reach a process running as root). The daemon forwards the caller's
// signals and returns the helper's exit status; a caller that goes away hangs CMD up.
#include <boost/asio/awaitable.hpp>
#include <boost/asio/basic_socket_acceptor.hpp>
#include <boost/asio/generic/seq_packet_protocol.hpp>

#include <cstddef>
#include <map>
#include <string>

#include <sys/types.h>

namespace airlock::daemon {

using sandbox_acceptor = boost::asio::basic_socket_acceptor<boost::asio::generic::seq_packet_protocol>;

struct sandbox_service {
  std::string control;          // the daemon's control socket, for the helper
  std::string state_dir, pool;  // the config's sandboxes: section
  std::string executable{"/proc/self/exe"};
  std::size_t max_running = 64;   // sandboxes made for callers at once
  std::size_t max_per_user = 16;  // of those, for one uid
  std::size_t max_pending = 64;   // connections whose call has not arrived yet
  std::size_t pending = 0;
  // Running helpers, in total and per caller; the main loop's alone.
  std::size_t running = 0;
  std::map<uid_t, std::size_t> per_user;
};

// Serves calls on `acceptor` until it is closed. `service` outlives the loop.
boost::asio::awaitable<void> serve_sandbox_calls(sandbox_acceptor& acceptor, sandbox_service& service);

}  // namespace airlock::daemon
