// Every listening socket of an instance: bound at start (before anything runs, so a port
// that is taken is an exit), served by one coroutine each on its loop, closed at shutdown.
#include "base/deadline.hpp"
#include "base/open_files.hpp"
#include "base/spawn.hpp"
#include "daemon/instance_parts.hpp"
#include "daemon/listen.hpp"
#include "dns/server.hpp"
#include "proxy/connection.hpp"
#include "proxy/own_socket.hpp"
#include "proxy/steps.hpp"

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>

#include <grp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

namespace airlock::daemon {

namespace {

namespace asio = boost::asio;
using asio::ip::tcp;
using asio::ip::udp;
using unix_socket = asio::local::stream_protocol;

startup_error cannot_listen(std::string message) { return startup_error{1, std::move(message)}; }

using connection_handler = asio::awaitable<void> (*)(tcp::socket, tcp::endpoint, proxy::proxy_context&);

// At most one line per 10 s however many connections are reset, with what to do about it.
void warn_out_of_descriptors() {
  static std::atomic<std::int64_t> last_warned{0};
  static std::atomic<std::uint64_t> since{0};
  ++since;
  const auto now = std::chrono::steady_clock::now().time_since_epoch().count();
  auto last = last_warned.load();
  if (last != 0 && now - last < std::chrono::nanoseconds(std::chrono::seconds(10)).count()) return;
  if (!last_warned.compare_exchange_strong(last, now)) return;
  std::fprintf(stderr,
               "airlock: out of file descriptors: %llu new connection(s) reset at accept (logged as "
               "limit:open_files); raise the open-files limit (ulimit -n, LimitNOFILE=) or lower "
               "limits.connections\n",
               static_cast<unsigned long long>(since.exchange(0)));
}

// Out of descriptors, the connections waiting in the listener's queue would wait there,
// silent, until something closes. With the loop's spare descriptor lent for each, they are
// accepted, reset at once and logged as refusals, a few at a time; the accept loop then
// pauses, so a flood of them costs little.
void shed_waiting(tcp::acceptor& acceptor, base::spare_descriptor& spare, proxy::proxy_context& ctx) {
  for (int i = 0; i < 64 && spare.lend(); ++i) {
    tcp::endpoint peer;
    const int fd = proxy::accept_with_peer(acceptor, peer, SOCK_CLOEXEC);
    if (fd < 0) {  // none waiting, or another loop took the descriptor first
      spare.restore();
      return;
    }
    proxy::close_with_reset(fd);
    spare.restore();
    proxy::steps::log_refused_at_accept(ctx, peer, "open_files");
    warn_out_of_descriptors();
  }
}

bool out_of_descriptors(const boost::system::error_code& ec) {
  return ec == asio::error::no_descriptors || ec == boost::system::errc::too_many_files_open_in_system;
}

// At a daemon-wide cap (limits.connections, limits.pending_handshakes) this listener stops
// accepting until the count is below it again: new connections wait in the kernel's listen
// queue, which holds thousands, as HAProxy's maxconn has them wait, instead of being
// accepted only to be reset. What the queue cannot hold the kernel drops, and the client
// sends its SYN again. Said once on stderr per pause that starts at least 10 s after the
// last one was said, and counted in /metrics (pauses, and the time spent paused).
asio::awaitable<void> wait_below_cap(parts_t& r, tcp::acceptor& acceptor, proxy::proxy_context& ctx,
                                     std::string_view cap) {
  static std::atomic<std::int64_t> last_said{0};
  const auto started = std::chrono::steady_clock::now();
  const auto now_ticks = started.time_since_epoch().count();
  if (auto last = last_said.load();
      (last == 0 || now_ticks - last >= std::chrono::nanoseconds(std::chrono::seconds(10)).count()) &&
      last_said.compare_exchange_strong(last, now_ticks))
    std::fprintf(stderr,
                 "airlock: at limits.%.*s: new connections wait in the listen queue until connections close "
                 "(airlock_accept_pauses_total counts these pauses)\n",
                 static_cast<int>(cap.size()), cap.data());
  r.accept_pauses.fetch_add(1, std::memory_order_relaxed);
  asio::steady_timer poll(acceptor.get_executor());
  while (!r.stopping && !ctx.limits.full().empty()) {
    poll.expires_after(std::chrono::milliseconds(5));
    co_await poll.async_wait(base::nothrow);
  }
  const auto paused = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - started);
  r.accept_paused_us.fetch_add(static_cast<std::uint64_t>(paused.count()), std::memory_order_relaxed);
}

asio::awaitable<void> accept_loop(parts_t& r, tcp::acceptor& acceptor, proxy::proxy_context& ctx,
                                  connection_handler handle) {
  base::spare_descriptor spare;
  for (;;) {
    if (const auto cap = ctx.limits.full(); !cap.empty()) {
      co_await wait_below_cap(r, acceptor, ctx, cap);
      if (r.stopping) co_return;
      continue;
    }
    // The peer as accept(2) returned it: no getpeername, and known even when the client
    // has already reset by the time its connection is judged.
    // Asked again right before accept(2): the wait for a connection may have begun below
    // the cap and ended above it (another loop accepted meanwhile).
    constexpr auto below_cap = [](const void* l) { return static_cast<const proxy::limiter*>(l)->full().empty(); };
    auto [ec, socket, peer, held] = co_await proxy::accept_nonblocking(acceptor, below_cap, &ctx.limits);
    if (r.stopping || ec == asio::error::operation_aborted) co_return;
    if (held) continue;  // the check above pauses
    if (ec) {
      if (out_of_descriptors(ec)) shed_waiting(acceptor, spare, ctx);
      // Pause instead of spinning on a listener that cannot accept.
      asio::steady_timer pause(acceptor.get_executor(), std::chrono::milliseconds(50));
      co_await pause.async_wait(base::nothrow);
      continue;
    }
    base::spawn_session(acceptor.get_executor(), handle(std::move(socket), peer, ctx), [](const char* what) {
      std::fprintf(stderr, "airlock: connection: internal error: %s\n", what);
    });
  }
}

}  // namespace

std::optional<startup_error> bind_dns_listeners(parts_t& r) {
  for (const auto& ep : r.cfg.listen.dns) {
    // UDP and TCP on one port number: the sandbox's nft table redirects both to it.
    auto& s = r.dns_sockets.emplace_back(r.io);
    auto& a = r.dns_acceptors.emplace_back(r.io);
    boost::system::error_code ec;
    for (int attempt = 0; attempt < 8; ++attempt) {
      ec = bind_udp(s, udp::endpoint(ep.address, ep.port));
      if (ec) break;
      ec = listen_tcp(a, tcp::endpoint(ep.address, s.local_endpoint().port()));
      if (!ec || ep.port != 0) break;
      boost::system::error_code ignored;
      s.close(ignored);  // a kernel-picked UDP port whose TCP twin is taken: pick again
    }
    if (ec) return cannot_listen("cannot listen for dns on " + ep.to_string() + ": " + ec.message());
    r.dns_bound.push_back({ep.address, s.local_endpoint().port()});
  }
  return std::nullopt;
}

// The main loop's proxy listeners (the first of a SO_REUSEPORT group when other loops will
// join it) and the admin port.
std::optional<startup_error> bind_tcp_listeners(parts_t& r, unsigned loops) {
  struct tcp_listeners {
    const char* what;
    const std::vector<policy::endpoint_config>& wanted;
    std::list<tcp::acceptor>& acceptors;
    std::vector<policy::endpoint_config>& bound;
    port_use use;
    bool transparent = false;
  };
  const auto group = loops > 1 ? port_use::opens_group : port_use::alone;
  for (auto [what, wanted, acceptors, bound, use, transparent] :
       {tcp_listeners{"proxy", r.cfg.listen.proxy, r.proxy_acceptors, r.proxy_bound, group},
        tcp_listeners{"tproxy", r.cfg.listen.tproxy, r.tproxy_acceptors, r.tproxy_bound, group, true},
        tcp_listeners{"http_proxy", r.cfg.listen.http_proxy, r.explicit_acceptors, r.explicit_bound, group},
        tcp_listeners{"admin", r.cfg.listen.admin, r.admin_acceptors, r.admin_bound, port_use::alone}}) {
    for (const auto& ep : wanted) {
      auto& a = acceptors.emplace_back(r.io);
      if (auto ec = listen_tcp(a, tcp::endpoint(ep.address, ep.port), use, transparent))
        return cannot_listen(std::string("cannot listen for ") + what + " on " + ep.to_string() + ": " + ec.message() +
                             (transparent ? " (a transparent socket needs CAP_NET_ADMIN)" : ""));
      bound.push_back({ep.address, a.local_endpoint().port()});
    }
  }
  return std::nullopt;
}

// Loops 2..n, each with its own sockets in the main loop's SO_REUSEPORT groups. Each copies
// the main loop's proxy context as it is now: this step comes after all that sets it.
std::optional<startup_error> open_other_loops(parts_t& r, unsigned loops) {
  for (unsigned i = 1; i < loops; ++i) {
    auto& loop = *r.loops.emplace_back(std::make_unique<proxy_loop>());
    loop.ctx = std::make_unique<proxy::proxy_context>(*r.proxy_ctx);
    loop.ctx->dns_loop = r.io.get_executor();
    // The ports the main loop got (also kernel-picked ones), joined with SO_REUSEPORT.
    struct joined {
      const std::vector<policy::endpoint_config>* bound;
      std::list<tcp::acceptor>* acceptors;
      bool transparent;
    };
    for (auto [wanted, acceptors, transparent] :
         {joined{&r.proxy_bound, &loop.proxy_acceptors, false}, joined{&r.tproxy_bound, &loop.tproxy_acceptors, true},
          joined{&r.explicit_bound, &loop.explicit_acceptors, false}}) {
      for (const auto& ep : *wanted) {
        auto& a = acceptors->emplace_back(loop.io);
        if (auto ec = listen_tcp(a, tcp::endpoint(ep.address, ep.port), port_use::joins_group, transparent); ec)
          return cannot_listen("cannot listen on " + ep.to_string() + " for event loop " + std::to_string(i + 1) +
                               ": " + ec.message());
      }
    }
  }
  return std::nullopt;
}

namespace {

// The group listen.socket_group names, or what to do about it.
base::result<gid_t> socket_group(const std::string& name) {
  std::array<char, 4096> buf{};
  group g{};
  group* found = nullptr;
  if (::getgrnam_r(name.c_str(), &g, buf.data(), buf.size(), &found) != 0 || found == nullptr)
    return base::fail<gid_t>("listen.socket_group: there is no group '" + name + "' (create it: groupadd --system " +
                             name + ")");
  return g.gr_gid;
}

// A socket file of the daemon's at `path`: never two daemons on one path, a stale file
// replaced, then mode 0600, or 0660 and the group when listen.socket_group names one.
template <typename Protocol>
std::optional<startup_error> listen_on_file(std::optional<socket_file<Protocol>>& slot, parts_t& r,
                                            const std::string& path, const char* what, const char* key) {
  std::error_code fs_ec;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), fs_ec);
  const typename Protocol::endpoint at{unix_socket::endpoint(path)};
  {
    typename Protocol::socket probe(r.io);
    boost::system::error_code ec;
    probe.connect(at, ec);
    if (!ec)
      return cannot_listen(std::string("another airlock daemon answers on the ") + what + " " + path +
                           "; stop it or set " + key);
  }
  std::optional<gid_t> gid;
  if (!r.cfg.listen.socket_group.empty()) {
    auto g = socket_group(r.cfg.listen.socket_group);
    if (!g) return startup_error{2, g.error()};
    gid = *g;
  }
  ::unlink(path.c_str());  // a stale socket from a daemon that did not shut down
  auto& file = slot.emplace(r.io, path);
  auto& a = file.acceptor;
  boost::system::error_code ec;
  a.open(at.protocol(), ec);
  if (!ec) a.bind(at, ec);
  file.bound = !ec;
  if (!ec && gid && ::chown(path.c_str(), static_cast<uid_t>(-1), *gid) != 0)
    ec.assign(errno, boost::system::generic_category());
  if (!ec && ::chmod(path.c_str(), gid ? 0660 : 0600) != 0) ec.assign(errno, boost::system::generic_category());
  if (!ec) a.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) return cannot_listen(std::string("cannot listen for ") + what + " on " + path + ": " + ec.message());
  return std::nullopt;
}

}  // namespace

// The control socket, when listen.control names one.
std::optional<startup_error> open_control_socket(parts_t& r) {
  if (r.cfg.listen.control.empty()) return std::nullopt;
  return listen_on_file(r.control, r, r.cfg.listen.control, "control socket", "listen.control");
}

// The sandbox socket, when listen.sandbox names one: `airlock run` without root.
std::optional<startup_error> open_sandbox_socket(parts_t& r) {
  if (r.cfg.listen.sandbox.empty()) return std::nullopt;
  r.sandbox_calls.control = r.cfg.listen.control;
  r.sandbox_calls.state_dir = r.cfg.sandboxes.state_dir;
  r.sandbox_calls.pool = r.cfg.sandboxes.pool;
  return listen_on_file(r.sandbox, r, r.cfg.listen.sandbox, "sandbox socket", "listen.sandbox");
}

void start_accepting(parts_t& r) {
  for (auto& s : r.dns_sockets) co_spawn(r.io, dns::serve_udp(s, *r.dns_ctx), report("dns listener"));
  if (r.sandbox) co_spawn(r.io, serve_sandbox_calls(r.sandbox->acceptor, r.sandbox_calls), report("sandbox listener"));
  const auto& d = r.cfg.dns;
  const dns::tcp_limits tcp{d.tcp_idle, d.tcp_connections, d.session_tcp_connections, d.tcp_queries_per_connection};
  for (auto& a : r.dns_acceptors) co_spawn(r.io, dns::serve_tcp(a, *r.dns_ctx, tcp), report("dns tcp listener"));
  for (auto& a : r.proxy_acceptors)
    co_spawn(r.io, accept_loop(r, a, *r.proxy_ctx, &proxy::handle_connection), report("proxy listener"));
  for (auto& a : r.tproxy_acceptors)
    co_spawn(r.io, accept_loop(r, a, *r.proxy_ctx, &proxy::handle_tproxy_connection), report("tproxy listener"));
  for (auto& a : r.explicit_acceptors)
    co_spawn(r.io, accept_loop(r, a, *r.proxy_ctx, &proxy::handle_explicit_connection), report("http_proxy listener"));
  for (auto& loop : r.loops) {
    for (auto& a : loop->proxy_acceptors)
      co_spawn(loop->io, accept_loop(r, a, *loop->ctx, &proxy::handle_connection), report("proxy listener"));
    for (auto& a : loop->tproxy_acceptors)
      co_spawn(loop->io, accept_loop(r, a, *loop->ctx, &proxy::handle_tproxy_connection), report("tproxy listener"));
    for (auto& a : loop->explicit_acceptors)
      co_spawn(loop->io, accept_loop(r, a, *loop->ctx, &proxy::handle_explicit_connection),
               report("http_proxy listener"));
  }
}

void close_listeners(parts_t& r) {
  boost::system::error_code ignored;
  for (auto& a : r.proxy_acceptors) a.close(ignored);
  for (auto& a : r.tproxy_acceptors) a.close(ignored);
  for (auto& a : r.explicit_acceptors) a.close(ignored);
  for (auto& loop : r.loops)
    asio::post(loop->io, [&l = *loop] {
      boost::system::error_code ignored_there;
      for (auto& a : l.proxy_acceptors) a.close(ignored_there);
      for (auto& a : l.tproxy_acceptors) a.close(ignored_there);
      for (auto& a : l.explicit_acceptors) a.close(ignored_there);
    });
  for (auto& s : r.dns_sockets) s.close(ignored);
  for (auto& a : r.dns_acceptors) a.close(ignored);
  for (auto& a : r.admin_acceptors) a.close(ignored);
  if (r.control) r.control->acceptor.close(ignored);
  if (r.sandbox) r.sandbox->acceptor.close(ignored);
}

}  // namespace airlock::daemon
