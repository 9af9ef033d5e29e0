#pragma once
// Private to daemon/instance*.cpp: what an instance owns (instance::parts) and what its
// files call of each other. One file per job:
//   instance.cpp            create as a list of steps, run, and the steps that are not below
//   instance_listeners.cpp  every listening socket: bound at start, served, closed at shutdown
//   instance_admin.cpp      the admin port (/metrics, /healthz) and the control socket's hooks
//   instance_signals.cpp    reload (SIGHUP, the control API) and shutdown (SIGINT/SIGTERM, request_stop)
#include "attribution/finder.hpp"
#include "base/loop_grace.hpp"
#include "base/overload.hpp"
#include "base/spawn.hpp"
#include "certs/leaf_minter.hpp"
#include "daemon/host_addresses.hpp"
#include "daemon/instance.hpp"
#include "daemon/metrics.hpp"
#include "daemon/sandbox_service.hpp"
#include "daemon/session_registry.hpp"
#include "dns/answer_cache.hpp"
#include "dns/name_table.hpp"
#include "dns/query.hpp"
#include "dns/resolver.hpp"
#include "policy/config.hpp"
#include "policy/redirect_grants.hpp"
#include "policy/session_grants.hpp"
#include "policy/snapshot.hpp"
#include "policy/store.hpp"
#include "proxy/connection.hpp"
#include "record/approval_desk.hpp"
#include "record/decision_feed.hpp"
#include "record/decision_log.hpp"

#include <boost/asio/generic/seq_packet_protocol.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ip/udp.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/ssl/context.hpp>

#include <atomic>
#include <cstdio>
#include <list>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

namespace airlock::daemon {

// One more event loop on a thread of its own, for proxy connections: its own listening
// sockets (SO_REUSEPORT on the main loop's ports, so the kernel spreads connections over the
// loops). Policy, sessions, name table, limits, grants and the log are shared, each safe
// across threads; own resolution hops to the main loop, whose resolver and cache DNS uses.
// Every loop runs on one thread, and every socket, acceptor and timer of a loop is used
// only on that thread (other threads post to it: own resolution's answer, the process
// finder's results, shutdown), so Asio need not lock each socket's state for each of its
// operations (BOOST_ASIO_CONCURRENCY_HINT_UNSAFE_IO: one_thread_ as with a hint of 1, the
// scheduler's queue and the reactor's registrations still locked, for those posts).
constexpr int one_thread_per_loop = BOOST_ASIO_CONCURRENCY_HINT_UNSAFE_IO;

struct proxy_loop {
  std::unique_ptr<proxy::proxy_context> ctx;
  // Coroutines cut short at shutdown are destroyed with the loop and still log through
  // ctx: the loop goes before it, and what owns sockets on the loop goes before the loop.
  boost::asio::io_context io{one_thread_per_loop};
  std::list<boost::asio::ip::tcp::acceptor> proxy_acceptors;
  std::list<boost::asio::ip::tcp::acceptor> tproxy_acceptors;
  std::list<boost::asio::ip::tcp::acceptor> explicit_acceptors;
  std::thread thread;
};

// A listener on a unix socket file (the control API's, the sandbox socket) and the file it
// made: the file goes with it, also when create() gives up after a later step failed (a
// stale file would make the next start probe it and `airlock run` try it).
template <typename Protocol>
struct socket_file {
  socket_file(boost::asio::io_context& io, std::string at) : acceptor(io), path(std::move(at)) {}
  socket_file(const socket_file&) = delete;
  socket_file& operator=(const socket_file&) = delete;
  ~socket_file() {
    boost::system::error_code ignored;
    acceptor.close(ignored);
    if (bound) ::unlink(path.c_str());
  }
  boost::asio::basic_socket_acceptor<Protocol> acceptor;
  std::string path;
  bool bound = false;  // the file is ours to remove
};
using control_socket = socket_file<boost::asio::local::stream_protocol>;
using sandbox_socket = socket_file<boost::asio::generic::seq_packet_protocol>;

struct instance::parts {
  instance_options options;
  policy::config cfg;
  std::string log_path;
  // TLS inspection (when the config has a CA) and the redirects' one-shot allowances:
  // the contexts below point at them.
  std::unique_ptr<certs::leaf_minter> minter;
  std::optional<boost::asio::ssl::context> tls_server;
  std::optional<boost::asio::ssl::context> tls_upstream;
  std::optional<proxy::inspection_tls> inspection;
  policy::redirect_grants grants;
  std::unique_ptr<policy::session_grants> session_grants;  // given through the control API
  std::unique_ptr<record::approval_desk> approvals;        // denials held for an approver
  // Destroyed in reverse order. Coroutines cut short at shutdown are destroyed with the
  // loop, and each still logs its line then: everything they reach (the contexts, the
  // registry, the log) is declared before the loop. What owns sockets or timers on the
  // loop is declared after it. The registry closes the sessions as it goes, after the
  // loops: their totals include those lines.
  std::unique_ptr<record::decision_log> log;
  std::unique_ptr<record::decision_feed> feed;  // in front of the log: what the control API streams
  metrics stats;
  std::unique_ptr<policy::store> policies;
  std::unique_ptr<session_registry> sessions;
  dns::name_table names{{}, grace};    // read by every loop; what it unlinks waits for them all
  dns::answer_cache cache{{}, grace};  // likewise
  base::overload_state overload;       // memory pressure: read by every loop, set by watch_memory
  std::unique_ptr<dns::query_context> dns_ctx;
  std::unique_ptr<proxy::proxy_context> proxy_ctx;
  sandbox_service sandbox_calls;  // its calls' coroutines live on io
  boost::asio::io_context io{one_thread_per_loop};
  // Its batch timer is on io, so it goes before io (and before `names`, which only keeps a
  // pointer to it); its handlers on the other loops go with them.
  base::loop_grace grace;
  // The other loops (threads: in the config). The finder posts to them too: it goes first.
  std::vector<std::unique_ptr<proxy_loop>> loops;
  // Posts its results to the loop: goes before it.
  std::unique_ptr<attribution::finder> finder;
  std::unique_ptr<dns::resolver> resolver;
  std::list<boost::asio::ip::udp::socket> dns_sockets;
  std::list<boost::asio::ip::tcp::acceptor> dns_acceptors;
  std::list<boost::asio::ip::tcp::acceptor> explicit_acceptors;
  std::list<boost::asio::ip::tcp::acceptor> admin_acceptors;
  std::optional<control_socket> control;
  std::optional<sandbox_socket> sandbox;
  std::list<boost::asio::ip::tcp::acceptor> proxy_acceptors;  // REDIRECT
  std::list<boost::asio::ip::tcp::acceptor> tproxy_acceptors;
  std::vector<policy::endpoint_config> proxy_bound, tproxy_bound, explicit_bound, dns_bound, admin_bound;
  std::optional<host_address_watch> host_watch;  // airlock's own addresses, as they change
  // Listeners that stopped accepting at a daemon-wide cap (instance_listeners.cpp): how
  // often, and for how long in all.
  std::atomic<std::uint64_t> accept_pauses = 0;
  std::atomic<std::uint64_t> accept_paused_us = 0;
  std::atomic<bool> stopping = false;
  std::string ready;

  metrics_sample sample() const;  // instance_admin.cpp
};

using parts_t = instance::parts;

// Completion for long-lived coroutines: an escaping exception is a bug, said on stderr
// with the part that stopped, never swallowed.
inline auto report(const char* where) {
  return base::report_exceptions(
      [where](const char* what) { std::fprintf(stderr, "airlock: %s stopped: %s\n", where, what); });
}

// instance.cpp
std::string inspection_ca(const policy::config& cfg);

// instance_listeners.cpp. The bind steps of create: a failure is an exit (code 1), before
// anything runs.
std::optional<startup_error> bind_dns_listeners(parts_t& r);
std::optional<startup_error> bind_tcp_listeners(parts_t& r, unsigned loops);
std::optional<startup_error> open_other_loops(parts_t& r, unsigned loops);
std::optional<startup_error> open_control_socket(parts_t& r);
std::optional<startup_error> open_sandbox_socket(parts_t& r);
void start_accepting(parts_t& r);  // DNS and proxy, on every loop
void close_listeners(parts_t& r);  // all but the host-address watch; from the main loop

// instance_admin.cpp
void start_admin_and_control(parts_t& r);

// instance_signals.cpp
registry_result<std::shared_ptr<const policy::snapshot>> reload(parts_t& r);
void begin_shutdown(parts_t& r);

}  // namespace airlock::daemon
