#include "daemon/instance.hpp"

#include "attribution/finder.hpp"
#include "base/cpu_quota.hpp"
#include "base/deadline.hpp"
#include "base/loop_grace.hpp"
#include "base/open_files.hpp"
#include "base/spawn.hpp"
#include "certs/ca.hpp"
#include "certs/leaf_minter.hpp"
#include "certs/tls_contexts.hpp"
#include "daemon/control_api.hpp"
#include "daemon/host_addresses.hpp"
#include "daemon/http_server.hpp"
#include "daemon/listen.hpp"
#include "daemon/metrics.hpp"
#include "daemon/overload_watch.hpp"
#include "dns/resolver.hpp"
#include "dns/server.hpp"
#include "policy/config.hpp"
#include "policy/redirect_grants.hpp"
#include "policy/snapshot.hpp"
#include "policy/store.hpp"
#include "proxy/connection.hpp"
#include "proxy/own_socket.hpp"
#include "proxy/steps.hpp"
#include "record/decision_log.hpp"

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ip/udp.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <list>
#include <thread>

#include <sched.h>

#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

namespace airlock::daemon {

namespace {

namespace asio = boost::asio;
using asio::ip::tcp;
using asio::ip::udp;
using unix_socket = asio::local::stream_protocol;

std::string error_lines(const std::vector<policy::config_error>& errors) {
  std::string out;
  for (const auto& e : errors) out += (out.empty() ? "" : "\n") + e.to_string();
  return out;
}

// Completion for long-lived coroutines: an escaping exception is a bug, said on stderr
// with the part that stopped, never swallowed.
auto report(const char* where) {
  return base::report_exceptions(
      [where](const char* what) { std::fprintf(stderr, "airlock: %s stopped: %s\n", where, what); });
}

// The CA a sandbox should trust: only when some rule terminates TLS with it.
std::string inspection_ca(const policy::config& cfg) {
  if (cfg.inspection.ca_dir.empty()) return {};
  for (const auto& p : cfg.policies)
    for (const auto& rule : p.allow)
      if (rule.inspect) return (std::filesystem::path(cfg.inspection.ca_dir) / "ca.crt").string();
  return {};
}

// The default number of event loops: the CPUs this process may run on, or fewer when its
// cgroup's CPU quota is less (base/cpu_quota.hpp).
unsigned usable_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  const unsigned cpus = ::sched_getaffinity(0, sizeof set, &set) == 0
                            ? static_cast<unsigned>(std::max(1, CPU_COUNT(&set)))
                            : 1;
  const auto quota = base::cpu_quota::of_this_process();
  if (!quota || base::cpu_quota::loops_for(*quota) >= cpus) return cpus;
  std::fprintf(stderr, "airlock: threads: auto: %u, for the cgroup's CPU quota of %.2f (of %u CPUs)\n",
               base::cpu_quota::loops_for(*quota), *quota, cpus);
  return base::cpu_quota::loops_for(*quota);
}

}  // namespace

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
  asio::io_context io{one_thread_per_loop};
  std::list<tcp::acceptor> proxy_acceptors;
  std::list<tcp::acceptor> tproxy_acceptors;
  std::list<tcp::acceptor> explicit_acceptors;
  std::thread thread;
};

struct instance::parts {
  instance_options options;
  policy::config cfg;
  std::string log_path;
  // TLS inspection (when the config has a CA) and the redirects' one-shot allowances:
  // the contexts below point at them.
  std::unique_ptr<certs::leaf_minter> minter;
  std::optional<asio::ssl::context> tls_server;
  std::optional<asio::ssl::context> tls_upstream;
  std::optional<proxy::inspection_tls> inspection;
  policy::redirect_grants grants;
  // Destroyed in reverse order. Coroutines cut short at shutdown are destroyed with the
  // loop, and each still logs its line then: everything they reach (the contexts, the
  // registry, the log) is declared before the loop. What owns sockets or timers on the
  // loop is declared after it. The registry closes the sessions as it goes, after the
  // loops: their totals include those lines.
  std::unique_ptr<record::decision_log> log;
  metrics stats;
  std::unique_ptr<policy::store> policies;
  std::unique_ptr<session_registry> sessions;
  dns::name_table names{{}, grace};    // read by every loop; what it unlinks waits for them all
  dns::answer_cache cache{{}, grace};  // likewise
  base::overload_state overload;       // memory pressure: read by every loop, set by watch_memory
  std::unique_ptr<dns::query_context> dns_ctx;
  std::unique_ptr<proxy::proxy_context> proxy_ctx;
  asio::io_context io{one_thread_per_loop};
  // Its batch timer is on io, so it goes before io (and before `names`, which only keeps a
  // pointer to it); its handlers on the other loops go with them.
  base::loop_grace grace;
  // The other loops (threads: in the config). The finder posts to them too: it goes first.
  std::vector<std::unique_ptr<proxy_loop>> loops;
  // Posts its results to the loop: goes before it.
  std::unique_ptr<attribution::finder> finder;
  std::unique_ptr<dns::resolver> resolver;
  std::list<udp::socket> dns_sockets;
  std::list<tcp::acceptor> dns_acceptors;
  std::list<tcp::acceptor> explicit_acceptors;
  std::list<tcp::acceptor> admin_acceptors;
  std::optional<unix_socket::acceptor> control;
  std::list<tcp::acceptor> proxy_acceptors;  // REDIRECT
  std::list<tcp::acceptor> tproxy_acceptors;
  std::vector<policy::endpoint_config> proxy_bound, tproxy_bound, explicit_bound, dns_bound, admin_bound;
  std::optional<host_address_watch> host_watch;     // airlock's own addresses, as they change
  std::atomic<std::size_t> active_connections = 0;  // on every loop
  std::atomic<bool> stopping = false;
  std::string ready;

  metrics_sample sample() const {
    metrics_sample out{active_connections.load(), sessions->list().size(), log->queue_depth(), log->dropped_total()};
    out.overload_level = static_cast<int>(overload.level());
    out.memory_pressure = overload.pressure();
    if (minter) {
      out.leaf_hits = minter->hits();
      out.leaf_minted = minter->misses();
      out.leaf_evicted = minter->evictions();
    }
    return out;
  }
};

namespace {

// The CA, its leaf minter and both TLS contexts, when the config names a CA. A rule that
// inspects without one never gets here: the config loader refuses it.
std::string load_inspection(instance::parts& p) {
  const auto& cfg = p.cfg.inspection;
  if (cfg.ca_dir.empty()) return {};
  auto ca = certs::load_ca(cfg.ca_dir);
  if (!ca.has_value()) return p.cfg.file + ": inspection.ca_dir: " + ca.error();
  auto minter = certs::leaf_minter::create(std::move(*ca));
  if (!minter.has_value()) return "TLS inspection: " + minter.error();
  auto server = certs::server_context();
  if (!server.has_value()) return "TLS inspection: " + server.error();
  auto upstream = certs::upstream_context(cfg.upstream_ca);
  if (!upstream.has_value()) return p.cfg.file + ": inspection.upstream_ca: " + upstream.error();
  p.minter = std::move(*minter);
  p.tls_server.emplace(std::move(*server));
  p.tls_upstream.emplace(std::move(*upstream));
  p.inspection.emplace(proxy::inspection_tls{*p.minter, *p.tls_server, *p.tls_upstream});
  return {};
}

// The host's interface addresses and the addresses the listeners are bound to (a listener
// on 0.0.0.0 has its addresses among the interfaces'), as airlock's own.
void publish_own_addresses(instance::parts& p) {
  std::string error;
  auto own = read_host_addresses(&error);
  if (!error.empty()) std::fprintf(stderr, "airlock: warning: the host's addresses: %s\n", error.c_str());
  for (const auto* bound : {&p.proxy_bound, &p.tproxy_bound, &p.explicit_bound, &p.dns_bound, &p.admin_bound})
    for (const auto& ep : *bound)
      if (!ep.address.is_unspecified())
        own.push_back({ep.address, static_cast<std::uint8_t>(ep.address.is_v4() ? 32 : 128)});
  p.policies->publish_host_addresses(std::move(own));
}

}  // namespace

namespace {

using parts_t = instance::parts;

}  // namespace

instance::instance(std::unique_ptr<parts> p) : parts_(std::move(p)) {}
instance::~instance() {
  if (parts_->control) {
    boost::system::error_code ignored;
    parts_->control->close(ignored);
    ::unlink(parts_->cfg.listen.control.c_str());
  }
}

asio::io_context& instance::io() { return parts_->io; }
session_registry& instance::registry() { return *parts_->sessions; }
const std::string& instance::ready_line() const { return parts_->ready; }

control::listener_ports instance::ports() const {
  auto bound = [](const std::vector<policy::endpoint_config>& eps) {
    std::vector<control::bound_endpoint> out;
    for (const auto& ep : eps) out.push_back({ep.address, ep.port});
    return out;
  };
  auto out = control::choose_listeners(bound(parts_->proxy_bound), bound(parts_->dns_bound));
  out.decisions_log = parts_->log_path;
  out.inspection_ca = inspection_ca(parts_->cfg);
  return out;
}

namespace {

using connection_handler = asio::awaitable<void> (*)(tcp::socket, tcp::endpoint, proxy::proxy_context&);

// Counts the connection while it lives, so shutdown can wait for the open ones.
asio::awaitable<void> serve_connection(parts_t& r, tcp::socket socket, tcp::endpoint peer, proxy::proxy_context& ctx,
                                       connection_handler handle) {
  struct count {
    parts_t& r;
    explicit count(parts_t& rr) : r(rr) { ++r.active_connections; }
    ~count() { --r.active_connections; }
  } guard(r);
  co_await handle(std::move(socket), peer, ctx);
}

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

asio::awaitable<void> accept_loop(parts_t& r, tcp::acceptor& acceptor, proxy::proxy_context& ctx,
                                  connection_handler handle) {
  base::spare_descriptor spare;
  for (;;) {
    // The peer as accept(2) returned it: no getpeername, and known even when the client
    // has already reset by the time its connection is judged.
    auto [ec, socket, peer] = co_await proxy::accept_nonblocking(acceptor);
    if (r.stopping || ec == asio::error::operation_aborted) co_return;
    if (ec) {
      if (out_of_descriptors(ec)) shed_waiting(acceptor, spare, ctx);
      // Pause instead of spinning on a listener that cannot accept.
      asio::steady_timer pause(acceptor.get_executor(), std::chrono::milliseconds(50));
      co_await pause.async_wait(base::nothrow);
      continue;
    }
    base::spawn_session(
        acceptor.get_executor(), serve_connection(r, std::move(socket), peer, ctx, handle),
        [](const char* what) { std::fprintf(stderr, "airlock: connection: internal error: %s\n", what); });
  }
}

// The name table forgets expired answers once a minute (and whenever a cap is hit).
asio::awaitable<void> expire_names(parts_t& r) {
  asio::steady_timer tick(r.io);
  while (!r.stopping) {
    tick.expires_after(std::chrono::seconds(60));
    auto [ec] = co_await tick.async_wait(base::nothrow);
    if (ec) co_return;
    r.names.expire(dns::name_table::clock::now());
  }
}

// Memory pressure (base/overload.hpp) changed level: said once on stderr, and going up
// from normal frees what can be freed at once.
void on_overload(parts_t& r, base::overload_level from, base::overload_level to, double pressure) {
  std::size_t dropped = 0;
  if (from == base::overload_level::normal) {
    dropped = r.cache.shrink(r.cache.size() / 4);
    r.names.expire(dns::name_table::clock::now());
  }
  static constexpr const char* doing[] = {
      "back to normal", "new connections get a quarter of the peek and idle timeouts",
      "refusing new connections and DNS queries (limit:memory); relayed connections go on"};
  std::fprintf(stderr, "airlock: memory pressure %.0f%%: %s -> %s: %s", pressure * 100, to_string(from), to_string(to),
               doing[static_cast<int>(to)]);
  if (dropped > 0) std::fprintf(stderr, "; %zu cached answers dropped", dropped);
  std::fputc('\n', stderr);
}

asio::awaitable<void> drain_then_stop(parts_t& r) {
  // Listeners are closed; give open connections a moment to finish, then stop. Those
  // still open are cut, and each still logs its line as its coroutine is destroyed.
  asio::steady_timer tick(r.io);
  for (int i = 0; i < 50 && r.active_connections.load() > 0; ++i) {
    tick.expires_after(std::chrono::milliseconds(100));
    co_await tick.async_wait(base::nothrow);
  }
  r.io.stop();
}

void begin_shutdown(parts_t& r) {
  if (r.stopping.exchange(true)) return;
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
  if (r.control) r.control->close(ignored);
  if (r.host_watch) r.host_watch->stop();
  co_spawn(r.io, drain_then_stop(r), report("shutdown"));
}

registry_result<std::shared_ptr<const policy::snapshot>> reload(parts_t& r) {
  auto fail = [&](registry_error e) {
    r.stats.count_reload(false);
    return e;
  };
  if (!r.options.config_path)
    return fail(registry_error{409, {"the embedded default policy is in use; there is no file to reload"}});
  auto cfg = policy::load_config_file(*r.options.config_path);
  if (!cfg.has_value()) {
    registry_error e{422, {}};
    for (const auto& err : cfg.error()) e.messages.push_back(err.to_string());
    return fail(std::move(e));
  }
  // The CA and the origin trust are loaded once, at start: a reload cannot bring them.
  if (cfg->inspection.ca_dir != r.cfg.inspection.ca_dir || cfg->inspection.upstream_ca != r.cfg.inspection.upstream_ca)
    return fail(registry_error{
        422,
        {cfg->file + ": inspection: ca_dir and upstream_ca are read at start; restart the daemon to change them"}});
  auto snap = r.sessions->apply(std::move(*cfg));
  if (!snap.has_value()) return fail(snap.error());
  r.stats.count_reload(true);
  return snap;
}

std::string info_json(const parts_t& r) {
  namespace json = boost::json;
  auto endpoints = [](const std::vector<policy::endpoint_config>& eps) {
    json::array out;
    for (const auto& ep : eps) out.emplace_back(json::object{{"address", ep.address.to_string()}, {"port", ep.port}});
    return out;
  };
  const auto snap = r.policies->current();
  return json::serialize(json::object{{"version", AIRLOCK_VERSION_STRING},
                                      {"policy_version", snap->version()},
                                      {"config", r.cfg.file},
                                      {"proxy", endpoints(r.proxy_bound)},
                                      {"tproxy", endpoints(r.tproxy_bound)},
                                      {"http_proxy", endpoints(r.explicit_bound)},
                                      {"dns", endpoints(r.dns_bound)},
                                      {"admin", endpoints(r.admin_bound)},
                                      {"decisions_log", r.log_path},
                                      {"inspection_ca", inspection_ca(r.cfg)}}) +
         "\n";
}

http_response admin(parts_t& r, const http_request& req) {
  std::string_view path = req.target;
  if (auto q = path.find('?'); q != std::string_view::npos) path = path.substr(0, q);
  if (req.method != "GET" && req.method != "HEAD") return json_error(405, "GET only");
  if (path == "/metrics")
    return http_response{200, "text/plain; version=0.0.4; charset=utf-8", r.stats.render(r.sample())};
  if (path == "/healthz") {
    // Healthy while the loop answers and the proxy is accepting; draining is not healthy.
    if (r.stopping) return http_response{503, "text/plain", "stopping\n"};
    return http_response{200, "text/plain", "ok\n"};
  }
  return json_error(404, "no such endpoint; try /metrics or /healthz");
}

// The control socket: owner only, and never two daemons on one path.
boost::system::result<void, std::string> open_control(parts_t& r) {
  const std::string& path = r.cfg.listen.control;
  std::error_code fs_ec;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), fs_ec);
  {
    unix_socket::socket probe(r.io);
    boost::system::error_code ec;
    probe.connect(unix_socket::endpoint(path), ec);
    if (!ec) return "another airlock daemon answers on the control socket " + path + "; stop it or set listen.control";
  }
  ::unlink(path.c_str());  // a stale socket from a daemon that did not shut down
  auto& a = r.control.emplace(r.io);
  boost::system::error_code ec;
  a.open(unix_socket(), ec);
  if (!ec) a.bind(unix_socket::endpoint(path), ec);
  if (!ec && ::chmod(path.c_str(), 0600) != 0) ec.assign(errno, boost::system::generic_category());
  if (!ec) a.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) return "cannot listen for control on " + path + ": " + ec.message();
  return {};
}

}  // namespace

boost::system::result<std::unique_ptr<instance>, startup_error> instance::create(const instance_options& options) {
  using result = boost::system::result<std::unique_ptr<instance>, startup_error>;
  auto fail = [](int code, std::string message) {
    return result(boost::system::in_place_error, startup_error{code, std::move(message)});
  };

  auto p = std::make_unique<parts>();
  p->options = options;
  auto cfg = options.config_path ? policy::load_config_file(*options.config_path) : policy::load_default_config();
  if (!cfg.has_value()) return fail(2, error_lines(cfg.error()));
  p->cfg = std::move(*cfg);
  if (options.embedded_listen) {
    // Two proxy ports: the second takes the sandbox's TCP to :443 (listener_ports::https),
    // so its HTTPS never meets TIME_WAIT left on the first by its other connections.
    p->cfg.listen.proxy = {policy::endpoint_config{*options.embedded_listen, 0},
                           policy::endpoint_config{*options.embedded_listen, 0}};
    p->cfg.listen.tproxy.clear();
    p->cfg.listen.dns = {policy::endpoint_config{*options.embedded_listen, 0}};
    p->cfg.listen.admin.clear();
    p->cfg.listen.http_proxy.clear();
    p->cfg.listen.control.clear();
  }
  if (p->cfg.listen.proxy.empty() && p->cfg.listen.tproxy.empty() && p->cfg.listen.dns.empty() &&
      p->cfg.listen.http_proxy.empty())
    // A daemon that listens on nothing would look healthy and guard nothing.
    return fail(2, p->cfg.file + ": nothing to serve: set listen.proxy (or listen.tproxy) and listen.dns, or "
                                 "listen.http_proxy (see 'airlock check --print-default')");

  p->log_path = options.decisions_log.value_or(p->cfg.decisions_log.empty() ? std::string(policy::default_decisions_log)
                                                                            : p->cfg.decisions_log);
  if (p->log_path != "-") {
    std::error_code ec;
    std::filesystem::create_directories(std::filesystem::path(p->log_path).parent_path(), ec);
  }
  auto log = record::decision_log::open(p->log_path);
  if (!log.has_value()) return fail(1, log.error());
  p->log = std::move(*log);

  // An empty snapshot first; apply() compiles the real one and opens the sessions.
  auto empty = policy::snapshot::compile(policy::config{});
  if (!empty.has_value()) return fail(1, "internal error: empty policy does not compile");
  p->policies = std::make_unique<policy::store>(std::move(*empty));
  p->sessions = std::make_unique<session_registry>(*p->policies, *p->log, p->stats);

  auto resolver = dns::resolver::create(p->io.get_executor(), {p->cfg.upstream_dns});
  if (!resolver.has_value()) return fail(1, resolver.error());
  p->resolver = std::move(*resolver);
  p->resolver->on_upstream_done = [stats = &p->stats](auto took, bool answered) {
    stats->observe_upstream(took, answered);
  };

  p->dns_ctx = std::make_unique<dns::query_context>(
      dns::query_context{*p->policies, *p->resolver, *p->sessions, p->names, p->cache});
  p->dns_ctx->settings = p->cfg.dns;
  // AAAA answers only when the proxy can carry IPv6: otherwise clients without Happy
  // Eyeballs would try an address whose connection can only be refused.
  const auto v6 = [](const auto& ep) { return ep.address.is_v6(); };
  p->dns_ctx->filter.ipv6 = std::any_of(p->cfg.listen.proxy.begin(), p->cfg.listen.proxy.end(), v6) ||
                            std::any_of(p->cfg.listen.tproxy.begin(), p->cfg.listen.tproxy.end(), v6);
  p->proxy_ctx = std::make_unique<proxy::proxy_context>(
      proxy::proxy_context{*p->policies, *p->resolver, *p->sessions, p->names, p->cache, {}});
  p->proxy_ctx->limits = proxy::limiter(p->cfg.limits);
  p->proxy_ctx->settings.peek_limit = p->cfg.timeouts.peek;
  p->proxy_ctx->settings.connect_limit = p->cfg.timeouts.connect;
  p->proxy_ctx->settings.idle_limit = p->cfg.timeouts.idle;
  p->dns_ctx->refuse_when_unrecorded = p->proxy_ctx->settings.refuse_when_unrecorded = p->cfg.refuse_when_unrecorded;
  p->dns_ctx->grants = p->proxy_ctx->grants = &p->grants;
  p->dns_ctx->overload = p->proxy_ctx->overload = &p->overload;
  if (auto e = load_inspection(*p); !e.empty()) return fail(1, e);
  if (p->inspection) p->proxy_ctx->inspection = &*p->inspection;
  // Sessions registered with a network namespace (by `airlock run`) get process attribution.
  p->finder = std::make_unique<attribution::finder>();
  auto netns_of = [sessions = p->sessions.get()](std::string_view id) { return sessions->netns_of(id); };
  p->dns_ctx->finder = p->proxy_ctx->finder = p->finder.get();
  p->dns_ctx->netns_of = p->proxy_ctx->netns_of = netns_of;
  p->sessions->on_removed = [f = p->finder.get(), g = &p->grants](const std::string& id, const std::string& netns) {
    if (!netns.empty()) f->forget(netns);
    g->forget(id);
  };

  for (const auto& ep : p->cfg.listen.dns) {
    // UDP and TCP on one port number: the sandbox's nft table redirects both to it.
    auto& s = p->dns_sockets.emplace_back(p->io);
    auto& a = p->dns_acceptors.emplace_back(p->io);
    boost::system::error_code ec;
    for (int attempt = 0; attempt < 8; ++attempt) {
      ec = bind_udp(s, udp::endpoint(ep.address, ep.port));
      if (ec) break;
      ec = listen_tcp(a, tcp::endpoint(ep.address, s.local_endpoint().port()));
      if (!ec || ep.port != 0) break;
      boost::system::error_code ignored;
      s.close(ignored);  // a kernel-picked UDP port whose TCP twin is taken: pick again
    }
    if (ec) return fail(1, "cannot listen for dns on " + ep.to_string() + ": " + ec.message());
    p->dns_bound.push_back({ep.address, s.local_endpoint().port()});
  }
  // Descriptors: as many as the hard limit allows, and a word when that is fewer than the
  // connection cap needs (past it, new connections are reset at accept: shed_waiting). Not
  // for the embedded daemon: the sandbox's command, started from this process, would inherit
  // the raised limit, and one sandbox's connections fit in the usual 1024.
  if (!options.embedded_listen)
    if (const auto open_files = base::raise_open_files_limit();
        base::connections_within(open_files) < p->cfg.limits.connections)
      std::fprintf(stderr,
                   "airlock: warning: the open-files limit (%llu) holds about %llu relayed connections, fewer than "
                   "limits.connections (%llu); past it new connections are reset. Raise the hard limit (ulimit -Hn, "
                   "LimitNOFILE=) or lower limits.connections\n",
                   static_cast<unsigned long long>(open_files),
                   static_cast<unsigned long long>(base::connections_within(open_files)),
                   static_cast<unsigned long long>(p->cfg.limits.connections));
  // The proxy's loops: the embedded daemon serves one sandbox and keeps to one.
  const unsigned loops = options.embedded_listen ? 1 : p->cfg.threads ? p->cfg.threads : usable_cpus();
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
       {tcp_listeners{"proxy", p->cfg.listen.proxy, p->proxy_acceptors, p->proxy_bound, group},
        tcp_listeners{"tproxy", p->cfg.listen.tproxy, p->tproxy_acceptors, p->tproxy_bound, group, true},
        tcp_listeners{"http_proxy", p->cfg.listen.http_proxy, p->explicit_acceptors, p->explicit_bound, group},
        tcp_listeners{"admin", p->cfg.listen.admin, p->admin_acceptors, p->admin_bound, port_use::alone}}) {
    for (const auto& ep : wanted) {
      auto& a = acceptors.emplace_back(p->io);
      if (auto ec = listen_tcp(a, tcp::endpoint(ep.address, ep.port), use, transparent))
        return fail(1, std::string("cannot listen for ") + what + " on " + ep.to_string() + ": " + ec.message() +
                           (transparent ? " (a transparent socket needs CAP_NET_ADMIN)" : ""));
      bound.push_back({ep.address, a.local_endpoint().port()});
    }
  }
  for (unsigned i = 1; i < loops; ++i) {
    auto& loop = *p->loops.emplace_back(std::make_unique<proxy_loop>());
    loop.ctx = std::make_unique<proxy::proxy_context>(*p->proxy_ctx);
    loop.ctx->dns_loop = p->io.get_executor();
    // The ports the main loop got (also kernel-picked ones), joined with SO_REUSEPORT.
    struct joined {
      const std::vector<policy::endpoint_config>* bound;
      std::list<tcp::acceptor>* acceptors;
      bool transparent;
    };
    for (auto [wanted, acceptors, transparent] :
         {joined{&p->proxy_bound, &loop.proxy_acceptors, false}, joined{&p->tproxy_bound, &loop.tproxy_acceptors, true},
          joined{&p->explicit_bound, &loop.explicit_acceptors, false}}) {
      for (const auto& ep : *wanted) {
        auto& a = acceptors->emplace_back(loop.io);
        if (auto ec = listen_tcp(a, tcp::endpoint(ep.address, ep.port), port_use::joins_group, transparent); ec)
          return fail(1, "cannot listen on " + ep.to_string() + " for event loop " + std::to_string(i + 1) + ": " +
                             ec.message());
      }
    }
  }
  {
    std::vector<asio::any_io_executor> readers{p->io.get_executor()};
    for (auto& loop : p->loops) readers.push_back(loop->io.get_executor());
    p->grace.start(p->io.get_executor(), std::move(readers));
  }
  if (!p->cfg.listen.control.empty())
    if (auto opened = open_control(*p); !opened.has_value()) return fail(1, opened.error());

  // airlock's own addresses, before the first packet is judged.
  publish_own_addresses(*p);
  p->host_watch.emplace(p->io.get_executor(), [&r = *p] { publish_own_addresses(r); });
  if (auto why = p->host_watch->start(); !why.empty())
    std::fprintf(stderr, "airlock: warning: %s; the host's addresses are read once, at start\n", why.c_str());

  if (auto applied = p->sessions->apply(p->cfg); !applied.has_value()) {
    std::string message;
    for (const auto& m : applied.error().messages) message += (message.empty() ? "" : "\n") + m;
    return fail(2, message);
  }
  // Sessions registered through the control API outlive a restart of the daemon (not of
  // the host: they name network namespaces, which do not): kept beside the control socket,
  // under /run by default. Restored before the first packet is judged.
  if (!p->cfg.listen.control.empty() && !options.embedded_listen) {
    const auto file = std::filesystem::path(p->cfg.listen.control).parent_path() / "sessions.json";
    const auto restored = p->sessions->restore_from(file);
    for (const auto& m : restored.messages) std::fprintf(stderr, "airlock: %s\n", m.c_str());
    if (restored.restored + restored.held > 0)
      std::fprintf(stderr, "airlock: restored %zu registered session%s from %s (%zu held)\n", restored.restored,
                   restored.restored == 1 ? "" : "s", file.c_str(), restored.held);
  }

  auto& r = *p;
  for (auto& s : r.dns_sockets) co_spawn(r.io, dns::serve_udp(s, *r.dns_ctx), report("dns listener"));
  for (auto& a : r.dns_acceptors) co_spawn(r.io, dns::serve_tcp(a, *r.dns_ctx, {}), report("dns tcp listener"));
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
  for (auto& a : r.admin_acceptors)
    co_spawn(r.io, serve_http(a, [&r](const http_request& req) { return admin(r, req); }), report("admin listener"));
  if (r.control)
    co_spawn(r.io,
             serve_http(*r.control, make_control_handler(control_hooks{*r.sessions, [&r] { return reload(r); },
                                                                       [&r] { return info_json(r); },
                                                                       [&r] { return r.sample(); }})),
             report("control listener"));
  co_spawn(r.io, expire_names(r), report("name table expiry"));
  co_spawn(r.io,
           watch_memory(r.cfg.overload, r.overload, r.stopping,
                        [&r](base::overload_level from, base::overload_level to, double pressure) {
                          on_overload(r, from, to, pressure);
                        }),
           report("memory pressure"));

  const auto current = r.policies->current();
  std::string listening;
  for (const auto& ep : r.proxy_bound) listening += " proxy=" + ep.to_string();
  for (const auto& ep : r.tproxy_bound) listening += " tproxy=" + ep.to_string();
  for (const auto& ep : r.explicit_bound) listening += " http_proxy=" + ep.to_string();
  for (const auto& ep : r.dns_bound) listening += " dns=" + ep.to_string();
  for (const auto& ep : r.admin_bound) listening += " admin=" + ep.to_string();
  if (r.control) listening += " control=" + r.cfg.listen.control;
  r.ready = "airlock: ready:" + listening + " policy=" + current->version() + " (" + r.cfg.file + ", " +
            std::to_string(current->rule_count()) + " rules) log=" + r.log_path +
            " threads=" + std::to_string(r.loops.size() + 1);
  return std::unique_ptr<instance>(new instance(std::move(p)));
}

void instance::run() {
  for (auto& loop : parts_->loops) loop->thread = std::thread([&io = loop->io] { io.run(); });
  parts_->io.run();
  for (auto& loop : parts_->loops) {
    loop->io.stop();                                   // connections still open there are cut: their lines are written
    if (loop->thread.joinable()) loop->thread.join();  // when the loop is destroyed
  }
  // Every session closes with its totals when the registry goes, after the loops: the
  // lines of the connections cut then are counted in them.
}

void instance::request_stop() {
  asio::post(parts_->io, [&r = *parts_] { begin_shutdown(r); });
}

void instance::handle_signals() {
  co_spawn(
      parts_->io,
      [](parts_t& r) -> asio::awaitable<void> {
        asio::signal_set signals(r.io, SIGINT, SIGTERM, SIGHUP);
        for (;;) {
          auto [ec, signo] = co_await signals.async_wait(base::nothrow);
          if (ec) co_return;
          if (signo == SIGHUP) {
            if (auto snap = reload(r); snap.has_value()) {
              std::fprintf(stderr,
                           "airlock: reloaded policy %s (%zu rules); changes to listen:, dns:, limits:, "
                           "timeouts: and overload: need a restart\n",
                           (*snap)->version().c_str(), (*snap)->rule_count());
            } else {
              std::fprintf(stderr, "airlock: reload failed; keeping policy %s:\n",
                           r.policies->current()->version().c_str());
              for (const auto& m : snap.error().messages) std::fprintf(stderr, "%s\n", m.c_str());
            }
            r.log->reopen();
            continue;
          }
          if (r.stopping) {
            r.io.stop();  // a second signal: stop now
            co_return;
          }
          std::fprintf(stderr, "airlock: shutting down (%zu open connections)\n", r.active_connections.load());
          begin_shutdown(r);
        }
      }(*parts_),
      report("signal handler"));
}

}  // namespace airlock::daemon
