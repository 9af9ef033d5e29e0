#include "core/daemon.hpp"

#include "core/deadline.hpp"
#include "core/decision_log.hpp"
#include "core/spawn.hpp"
#include "dns/resolver.hpp"
#include "dns/server.hpp"
#include "policy/config.hpp"
#include "policy/snapshot.hpp"
#include "policy/store.hpp"
#include "proxy/connection.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ip/udp.hpp>
#include <boost/asio/ip/v6_only.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>

#include <cstdio>
#include <algorithm>
#include <list>

namespace airlock::core {
namespace {

namespace asio = boost::asio;
using asio::ip::tcp;
using asio::ip::udp;

policy::config_result load(const daemon_options& o) {
  return o.config_path ? policy::load_config_file(*o.config_path) : policy::load_default_config();
}

void print_errors(const std::vector<policy::config_error>& errors) {
  for (const auto& e : errors) std::fprintf(stderr, "%s\n", e.to_string().c_str());
}

// Parts of the v1 schema that load but are not served by this version yet: said once at
// start, so nobody believes a listener or an inspection is there when it is not.
void warn_unserved(const policy::config& cfg) {
  auto warn = [](const char* what) { std::fprintf(stderr, "airlock: warning: %s\n", what); };
  if (!cfg.listen.http_proxy.empty()) warn("listen.http_proxy is not served yet; use the transparent listener");
  if (!cfg.listen.admin.empty()) warn("listen.admin is not served yet (no /metrics or /healthz)");
  if (!cfg.listen.control.empty()) warn("listen.control is not served yet (no control API)");
  bool inspect = false, redirects = false;
  for (const auto& p : cfg.policies) {
    redirects = redirects || !p.redirects.empty();
    for (const auto& r : p.allow) inspect = inspect || r.inspect;
  }
  if (inspect) warn("'inspect: true' rules are decided on SNI alone: TLS inspection is not in this version");
  if (redirects) warn("redirects: are not followed yet; a redirect target needs its own allow rule");
}

// Everything the running daemon owns, destroyed in reverse order of declaration: the
// event loop last, so coroutines cut short at shutdown still log through `log`.
struct running {
  std::unique_ptr<decision_log> log;
  asio::io_context io{1};
  std::unique_ptr<policy::store> policies;
  std::unique_ptr<dns::resolver> resolver;
  dns::name_table names;
  dns::answer_cache cache;
  std::unique_ptr<dns::query_context> dns_ctx;
  std::unique_ptr<proxy::proxy_context> proxy_ctx;
  std::list<udp::socket> dns_sockets;
  std::list<tcp::acceptor> dns_acceptors;
  std::list<tcp::acceptor> acceptors;
  std::size_t active_connections = 0;
  bool stopping = false;
};

// Completion for the daemon's long-lived coroutines: an escaping exception is a bug, said
// on stderr with the part that stopped, never swallowed.
auto report(const char* where) {
  return report_exceptions([where](const char* what) { std::fprintf(stderr, "airlock: %s stopped: %s\n", where, what); });
}

template <typename Socket, typename Endpoint>
bool bind_socket(Socket& s, const Endpoint& ep, std::string_view what) {
  boost::system::error_code ec;
  s.open(ep.protocol(), ec);
  if (!ec) s.set_option(asio::socket_base::reuse_address(true), ec);
  // [::] and 0.0.0.0 may both be listed; each takes its own family only.
  if (!ec && ep.address().is_v6()) s.set_option(asio::ip::v6_only(true), ec);
  if (!ec) s.bind(ep, ec);
  if (ec) {
    std::fprintf(stderr, "airlock: cannot listen for %.*s on %s: %s\n", static_cast<int>(what.size()), what.data(),
                 (ep.address().to_string() + ":" + std::to_string(ep.port())).c_str(), ec.message().c_str());
    return false;
  }
  return true;
}

// Counts the connection while it lives, so shutdown can wait for the open ones.
asio::awaitable<void> serve_connection(running& r, tcp::socket socket) {
  struct count {
    running& r;
    explicit count(running& rr) : r(rr) { ++r.active_connections; }
    ~count() { --r.active_connections; }
  } guard(r);
  co_await proxy::handle_connection(std::move(socket), *r.proxy_ctx);
}

bool listen_on(tcp::acceptor& a, const policy::endpoint_config& ep, std::string_view what) {
  if (!bind_socket(a, tcp::endpoint(ep.address, ep.port), what)) return false;
  boost::system::error_code ec;
  a.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) std::fprintf(stderr, "airlock: listen on %s: %s\n", ep.to_string().c_str(), ec.message().c_str());
  return !ec;
}

asio::awaitable<void> accept_loop(running& r, tcp::acceptor& acceptor) {
  for (;;) {
    auto [ec, socket] = co_await acceptor.async_accept(nothrow);
    if (r.stopping || ec == asio::error::operation_aborted) co_return;
    if (ec) {
      // EMFILE and friends: pause instead of spinning on a listener that cannot accept.
      asio::steady_timer pause(acceptor.get_executor(), std::chrono::milliseconds(50));
      co_await pause.async_wait(nothrow);
      continue;
    }
    spawn_session(acceptor.get_executor(), serve_connection(r, std::move(socket)), [](const char* what) {
      std::fprintf(stderr, "airlock: connection: internal error: %s\n", what);
    });
  }
}

// The name table forgets expired answers once a minute (and whenever a cap is hit).
asio::awaitable<void> expire_names(running& r) {
  asio::steady_timer tick(r.io);
  while (!r.stopping) {
    tick.expires_after(std::chrono::seconds(60));
    auto [ec] = co_await tick.async_wait(nothrow);
    if (ec) co_return;
    r.names.expire(dns::name_table::clock::now());
  }
}

asio::awaitable<void> drain_then_stop(running& r) {
  // Listeners are closed; give open connections a moment to finish, then stop. Those
  // still open are cut, and each still logs its line as its coroutine is destroyed.
  asio::steady_timer tick(r.io);
  for (int i = 0; i < 50 && r.active_connections > 0; ++i) {
    tick.expires_after(std::chrono::milliseconds(100));
    co_await tick.async_wait(nothrow);
  }
  r.io.stop();
}

void reload(running& r, const daemon_options& options) {
  if (!options.config_path) {
    std::fprintf(stderr, "airlock: SIGHUP: embedded default policy in use; nothing to reload\n");
  } else if (auto cfg = load(options); !cfg.has_value()) {
    std::fprintf(stderr, "airlock: reload failed; keeping policy %s:\n", r.policies->current()->version().c_str());
    print_errors(cfg.error());
  } else if (auto next = policy::snapshot::compile(*cfg); !next.has_value()) {
    std::fprintf(stderr, "airlock: reload failed; keeping policy %s:\n", r.policies->current()->version().c_str());
    print_errors(next.error());
  } else {
    std::fprintf(stderr, "airlock: reloaded policy %s (%zu rules); changes to listen: and dns: need a restart\n",
                 (*next)->version().c_str(), (*next)->rule_count());
    r.policies->publish(std::move(*next));
  }
  r.log->reopen();
}

asio::awaitable<void> handle_signals(running& r, const daemon_options& options) {
  asio::signal_set signals(r.io, SIGINT, SIGTERM, SIGHUP);
  for (;;) {
    auto [ec, signo] = co_await signals.async_wait(nothrow);
    if (ec) co_return;
    if (signo == SIGHUP) {
      reload(r, options);
      continue;
    }
    if (r.stopping) {
      r.io.stop();  // a second signal: stop now
      co_return;
    }
    std::fprintf(stderr, "airlock: shutting down (%zu open connections)\n", r.active_connections);
    r.stopping = true;
    boost::system::error_code ignored;
    for (auto& a : r.acceptors) a.close(ignored);
    for (auto& s : r.dns_sockets) s.close(ignored);
    for (auto& a : r.dns_acceptors) a.close(ignored);
    co_spawn(r.io, drain_then_stop(r), report("shutdown"));
  }
}

}  // namespace

int run_daemon(const daemon_options& options) {
  auto cfg = load(options);
  if (!cfg.has_value()) {
    print_errors(cfg.error());
    return 2;
  }
  if (cfg->listen.proxy.empty() && cfg->listen.dns.empty()) {
    // A daemon that listens on nothing would look healthy and guard nothing.
    std::fprintf(stderr, "%s: nothing to serve: set listen.proxy and listen.dns (see 'airlock check --print-default')\n",
                 cfg->file.c_str());
    return 2;
  }
  warn_unserved(*cfg);
  running r;
  const std::string log_path = options.decisions_log.value_or(cfg->decisions_log);
  if (log_path != "-") {
    std::error_code ec;
    std::filesystem::create_directories(std::filesystem::path(log_path).parent_path(), ec);
  }
  auto log = decision_log::open(log_path);
  if (!log.has_value()) {
    std::fprintf(stderr, "airlock: %s\n", log.error().c_str());
    return 1;
  }
  r.log = std::move(*log);
  auto snap = policy::snapshot::compile(*cfg);
  if (!snap.has_value()) {
    print_errors(snap.error());
    return 2;
  }
  r.policies = std::make_unique<policy::store>(std::move(*snap));

  auto resolver = dns::resolver::create(r.io.get_executor(), {cfg->upstream_dns});
  if (!resolver.has_value()) {
    std::fprintf(stderr, "airlock: %s\n", resolver.error().c_str());
    return 1;
  }
  r.resolver = std::move(*resolver);
  r.dns_ctx = std::make_unique<dns::query_context>(dns::query_context{*r.policies, *r.resolver, *r.log, r.names, r.cache});
  // AAAA answers only when the proxy can carry IPv6: otherwise clients without Happy
  // Eyeballs would try an address whose connection can only be refused.
  r.dns_ctx->settings = cfg->dns;
  r.dns_ctx->filter.ipv6 = std::any_of(cfg->listen.proxy.begin(), cfg->listen.proxy.end(),
                                       [](const auto& ep) { return ep.address.is_v6(); });
  r.proxy_ctx = std::make_unique<proxy::proxy_context>(proxy::proxy_context{*r.policies, *r.resolver, *r.log, r.names, r.cache, {}});

  for (const auto& ep : cfg->listen.dns) {
    auto& s = r.dns_sockets.emplace_back(r.io);
    if (!bind_socket(s, udp::endpoint(ep.address, ep.port), "dns (udp)")) return 1;
    if (!listen_on(r.dns_acceptors.emplace_back(r.io), ep, "dns (tcp)")) return 1;
  }
  for (const auto& ep : cfg->listen.proxy)
    if (!listen_on(r.acceptors.emplace_back(r.io), ep, "proxy")) return 1;

  for (auto& s : r.dns_sockets) co_spawn(r.io, dns::serve_udp(s, *r.dns_ctx), report("dns listener"));
  for (auto& a : r.dns_acceptors) co_spawn(r.io, dns::serve_tcp(a, *r.dns_ctx, {}), report("dns tcp listener"));
  for (auto& a : r.acceptors) co_spawn(r.io, accept_loop(r, a), report("proxy listener"));
  co_spawn(r.io, handle_signals(r, options), report("signal handler"));
  co_spawn(r.io, expire_names(r), report("name table expiry"));

  const auto current = r.policies->current();
  std::string where;
  for (const auto& ep : cfg->listen.proxy) where += " proxy=" + ep.to_string();
  for (const auto& ep : cfg->listen.dns) where += " dns=" + ep.to_string();
  std::fprintf(stderr, "airlock: ready:%s policy=%s (%s, %zu rules) log=%s\n", where.c_str(),
               current->version().c_str(), cfg->file.c_str(), current->rule_count(), log_path.c_str());
  r.io.run();
  return 0;
}

}  // namespace airlock::core
