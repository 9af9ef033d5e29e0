// The wiring of one running airlock: create as its list of steps, and run. The listeners,
// the admin side and the signals have files of their own (instance_parts.hpp lists them).
#include "daemon/instance.hpp"

#include "attribution/finder.hpp"
#include "base/cpu_quota.hpp"
#include "base/deadline.hpp"
#include "base/open_files.hpp"
#include "certs/ca.hpp"
#include "certs/leaf_minter.hpp"
#include "certs/tls_contexts.hpp"
#include "daemon/host_addresses.hpp"
#include "daemon/instance_parts.hpp"
#include "daemon/overload_watch.hpp"
#include "dns/resolver.hpp"
#include "policy/config.hpp"
#include "policy/snapshot.hpp"
#include "policy/store.hpp"
#include "proxy/connection.hpp"
#include "record/decision_log.hpp"

#include <boost/asio/steady_timer.hpp>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <thread>

#include <sched.h>

#include <unistd.h>

namespace airlock::daemon {

namespace {
namespace asio = boost::asio;
}  // namespace

// The CA a sandbox should trust: only when some rule terminates TLS with it.
std::string inspection_ca(const policy::config& cfg) {
  if (cfg.inspection.ca_dir.empty()) return {};
  for (const auto& p : cfg.policies)
    for (const auto& rule : p.allow)
      if (rule.inspect) return (std::filesystem::path(cfg.inspection.ca_dir) / "ca.crt").string();
  return {};
}

namespace {

// Two exit codes (instance.hpp): 2 when the configuration is wrong, 1 when what it names
// cannot be opened.
startup_error bad_config(std::string message) { return startup_error{2, std::move(message)}; }
startup_error cannot_open(std::string message) { return startup_error{1, std::move(message)}; }

std::string error_lines(const std::vector<policy::config_error>& errors) {
  std::string out;
  for (const auto& e : errors) out += (out.empty() ? "" : "\n") + e.to_string();
  return out;
}

std::optional<startup_error> load_config(parts_t& p) {
  const auto& options = p.options;
  auto cfg = options.config_path ? policy::load_config_file(*options.config_path) : policy::load_default_config();
  if (!cfg.has_value()) return bad_config(error_lines(cfg.error()));
  p.cfg = std::move(*cfg);
  if (options.embedded_listen) {
    // Two proxy ports: the second takes the sandbox's TCP to :443 (listener_ports::https),
    // so its HTTPS never meets TIME_WAIT left on the first by its other connections.
    p.cfg.listen.proxy = {policy::endpoint_config{*options.embedded_listen, 0},
                          policy::endpoint_config{*options.embedded_listen, 0}};
    p.cfg.listen.tproxy.clear();
    p.cfg.listen.dns = {policy::endpoint_config{*options.embedded_listen, 0}};
    p.cfg.listen.admin.clear();
    p.cfg.listen.http_proxy.clear();
    p.cfg.listen.control.clear();
    p.cfg.listen.sandbox.clear();
  }
  if (p.cfg.listen.proxy.empty() && p.cfg.listen.tproxy.empty() && p.cfg.listen.dns.empty() &&
      p.cfg.listen.http_proxy.empty())
    // A daemon that listens on nothing would look healthy and guard nothing.
    return bad_config(p.cfg.file + ": nothing to serve: set listen.proxy (or listen.tproxy) and listen.dns, or "
                                   "listen.http_proxy (see 'airlock check --print-default')");
  return std::nullopt;
}

std::optional<startup_error> open_decision_log(parts_t& p) {
  p.log_path = p.options.decisions_log.value_or(p.cfg.decisions_log.empty() ? std::string(policy::default_decisions_log)
                                                                            : p.cfg.decisions_log);
  if (p.log_path != "-") {
    std::error_code ec;
    std::filesystem::create_directories(std::filesystem::path(p.log_path).parent_path(), ec);
  }
  auto log = record::decision_log::open(p.log_path);
  if (!log.has_value()) return cannot_open(log.error());
  p.log = std::move(*log);
  p.feed = std::make_unique<record::decision_feed>(*p.log);
  return std::nullopt;
}

std::optional<startup_error> open_policy_store_and_sessions(parts_t& p) {
  // An empty snapshot first; apply() compiles the real one and opens the sessions.
  auto empty = policy::snapshot::compile(policy::config{});
  if (!empty.has_value()) return cannot_open("internal error: empty policy does not compile");
  p.policies = std::make_unique<policy::store>(std::move(*empty));
  p.session_grants = std::make_unique<policy::session_grants>(
      policy::session_grants::limits{p.cfg.limits.session_grants, p.cfg.limits.grants});
  // The approver sees a question's line as the log will have it: stamped by the registry.
  p.approvals = std::make_unique<record::approval_desk>(
      record::approval_desk::limits{p.cfg.limits.session_holds, p.cfg.limits.holds},
      [&p](record::decision_record& r) { p.sessions->stamp_record(r); });
  p.sessions = std::make_unique<session_registry>(*p.policies, *p.feed, p.stats, p.session_grants.get(),
                                                  p.approvals.get());
  return std::nullopt;
}

std::optional<startup_error> open_resolver(parts_t& p) {
  auto resolver = dns::resolver::create(p.io.get_executor(), {p.cfg.upstream_dns});
  if (!resolver.has_value()) return cannot_open(resolver.error());
  p.resolver = std::move(*resolver);
  p.resolver->on_upstream_done = [stats = &p.stats](auto took, bool answered) {
    stats->observe_upstream(took, answered);
  };
  return std::nullopt;
}

// What every DNS query and proxied connection reads: the main loop's two contexts, from
// the config. The other loops copy the proxy context later (open_other_loops).
void make_query_and_proxy_contexts(parts_t& p) {
  p.dns_ctx = std::make_unique<dns::query_context>(
      dns::query_context{*p.policies, *p.resolver, *p.sessions, p.names, p.cache});
  p.dns_ctx->settings = p.cfg.dns;
  // AAAA answers only when the proxy can carry IPv6: otherwise clients without Happy
  // Eyeballs would try an address whose connection can only be refused.
  const auto v6 = [](const auto& ep) { return ep.address.is_v6(); };
  p.dns_ctx->filter.ipv6 = std::any_of(p.cfg.listen.proxy.begin(), p.cfg.listen.proxy.end(), v6) ||
                           std::any_of(p.cfg.listen.tproxy.begin(), p.cfg.listen.tproxy.end(), v6);
  p.proxy_ctx = std::make_unique<proxy::proxy_context>(
      proxy::proxy_context{*p.policies, *p.resolver, *p.sessions, p.names, p.cache, {}});
  p.proxy_ctx->limits = proxy::limiter(p.cfg.limits);
  p.proxy_ctx->settings.peek_limit = p.cfg.timeouts.peek;
  p.proxy_ctx->settings.connect_limit = p.cfg.timeouts.connect;
  p.proxy_ctx->settings.idle_limit = p.cfg.timeouts.idle;
  p.dns_ctx->refuse_when_unrecorded = p.proxy_ctx->settings.refuse_when_unrecorded = p.cfg.refuse_when_unrecorded;
  p.dns_ctx->grants = p.proxy_ctx->grants = &p.grants;
  p.dns_ctx->session_grants = p.proxy_ctx->session_grants = p.session_grants.get();
  p.dns_ctx->approvals = p.proxy_ctx->approvals = p.approvals.get();
  p.dns_ctx->overload = p.proxy_ctx->overload = &p.overload;
}

// The CA, its leaf minter and both TLS contexts, when the config names a CA. A rule that
// inspects without one never gets here: the config loader refuses it.
std::optional<startup_error> load_inspection(parts_t& p) {
  const auto& cfg = p.cfg.inspection;
  if (cfg.ca_dir.empty()) return std::nullopt;
  auto ca = certs::load_ca(cfg.ca_dir);
  if (!ca.has_value()) return cannot_open(p.cfg.file + ": inspection.ca_dir: " + ca.error());
  auto minter = certs::leaf_minter::create(std::move(*ca));
  if (!minter.has_value()) return cannot_open("TLS inspection: " + minter.error());
  auto server = certs::server_context();
  if (!server.has_value()) return cannot_open("TLS inspection: " + server.error());
  auto upstream = certs::upstream_context(cfg.upstream_ca);
  if (!upstream.has_value()) return cannot_open(p.cfg.file + ": inspection.upstream_ca: " + upstream.error());
  p.minter = std::move(*minter);
  p.tls_server.emplace(std::move(*server));
  p.tls_upstream.emplace(std::move(*upstream));
  p.inspection.emplace(proxy::inspection_tls{*p.minter, *p.tls_server, *p.tls_upstream});
  p.proxy_ctx->inspection = &*p.inspection;
  return std::nullopt;
}

// Sessions registered with a network namespace (by `airlock run`) get process attribution.
void attach_process_finder(parts_t& p) {
  p.finder = std::make_unique<attribution::finder>();
  auto netns_of = [sessions = p.sessions.get()](std::string_view id) { return sessions->netns_of(id); };
  p.dns_ctx->finder = p.proxy_ctx->finder = p.finder.get();
  p.dns_ctx->netns_of = p.proxy_ctx->netns_of = netns_of;
  p.sessions->on_removed = [f = p.finder.get(), g = &p.grants](const std::string& id, const std::string& netns) {
    if (!netns.empty()) f->forget(netns);
    g->forget(id);
  };
}

// Descriptors: as many as the hard limit allows, and a word when that is fewer than the
// connection cap needs (past it, new connections are reset at accept: shed_waiting). Not
// for the embedded daemon: the sandbox's command, started from this process, would inherit
// the raised limit, and one sandbox's connections fit in the usual 1024.
void raise_descriptor_limit(const parts_t& p) {
  if (p.options.embedded_listen) return;
  const auto open_files = base::raise_open_files_limit();
  if (base::connections_within(open_files) >= p.cfg.limits.connections) return;
  std::fprintf(stderr,
               "airlock: warning: the open-files limit (%llu) holds about %llu relayed connections, fewer than "
               "limits.connections (%llu); past it new connections are reset. Raise the hard limit (ulimit -Hn, "
               "LimitNOFILE=) or lower limits.connections\n",
               static_cast<unsigned long long>(open_files),
               static_cast<unsigned long long>(base::connections_within(open_files)),
               static_cast<unsigned long long>(p.cfg.limits.connections));
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

// The proxy's loops: the embedded daemon serves one sandbox and keeps to one.
unsigned count_event_loops(const parts_t& p) {
  return p.options.embedded_listen ? 1 : p.cfg.threads ? p.cfg.threads : usable_cpus();
}

// What the name table and the answer cache unlink is freed only when every loop that reads
// them has run a handler since (base/loop_grace.hpp): after open_other_loops, so all are in.
void start_loop_grace(parts_t& p) {
  std::vector<asio::any_io_executor> readers{p.io.get_executor()};
  for (auto& loop : p.loops) readers.push_back(loop->io.get_executor());
  p.grace.start(p.io.get_executor(), std::move(readers));
}

// The host's interface addresses and the addresses the listeners are bound to (a listener
// on 0.0.0.0 has its addresses among the interfaces'), as airlock's own.
void publish_own_addresses(parts_t& p) {
  std::string error;
  auto own = read_host_addresses(&error);
  if (!error.empty()) std::fprintf(stderr, "airlock: warning: the host's addresses: %s\n", error.c_str());
  for (const auto* bound : {&p.proxy_bound, &p.tproxy_bound, &p.explicit_bound, &p.dns_bound, &p.admin_bound})
    for (const auto& ep : *bound)
      if (!ep.address.is_unspecified())
        own.push_back({ep.address, static_cast<std::uint8_t>(ep.address.is_v4() ? 32 : 128)});
  p.policies->publish_host_addresses(std::move(own));
}

// airlock's own addresses, before the first packet is judged.
void watch_own_addresses(parts_t& p) {
  publish_own_addresses(p);
  p.host_watch.emplace(p.io.get_executor(), [&r = p] { publish_own_addresses(r); });
  if (auto why = p.host_watch->start(); !why.empty())
    std::fprintf(stderr, "airlock: warning: %s; the host's addresses are read once, at start\n", why.c_str());
}

std::optional<startup_error> compile_policy(parts_t& p) {
  auto applied = p.sessions->apply(p.cfg);
  if (applied.has_value()) return std::nullopt;
  std::string message;
  for (const auto& m : applied.error().messages) message += (message.empty() ? "" : "\n") + m;
  return bad_config(message);
}

// Sessions registered through the control API outlive a restart of the daemon (not of
// the host: they name network namespaces, which do not): kept beside the control socket,
// under /run by default. Restored before the first packet is judged.
void restore_registered_sessions(parts_t& p) {
  if (p.cfg.listen.control.empty() || p.options.embedded_listen) return;
  const auto file = std::filesystem::path(p.cfg.listen.control).parent_path() / "sessions.json";
  const auto restored = p.sessions->restore_from(file);
  for (const auto& m : restored.messages) std::fprintf(stderr, "airlock: %s\n", m.c_str());
  if (restored.restored + restored.held > 0)
    std::fprintf(stderr, "airlock: restored %zu registered session%s from %s (%zu held)\n", restored.restored,
                 restored.restored == 1 ? "" : "s", file.c_str(), restored.held);
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

// Grants that expire end on time (their connections cut, their lines written), not at the
// next call that happens to look.
asio::awaitable<void> expire_grants(parts_t& r) {
  asio::steady_timer tick(r.io);
  while (!r.stopping) {
    tick.expires_after(std::chrono::seconds(1));
    auto [ec] = co_await tick.async_wait(base::nothrow);
    if (ec) co_return;
    r.sessions->sweep_grants();
  }
}

void start_upkeep(parts_t& r) {
  co_spawn(r.io, expire_names(r), report("name table expiry"));
  co_spawn(r.io, expire_grants(r), report("grant expiry"));
  co_spawn(r.io,
           watch_memory(r.cfg.overload, r.overload, r.stopping,
                        [&r](base::overload_level from, base::overload_level to, double pressure) {
                          on_overload(r, from, to, pressure);
                        }),
           report("memory pressure"));
}

std::string compose_ready_line(const parts_t& r) {
  const auto current = r.policies->current();
  std::string listening;
  for (const auto& ep : r.proxy_bound) listening += " proxy=" + ep.to_string();
  for (const auto& ep : r.tproxy_bound) listening += " tproxy=" + ep.to_string();
  for (const auto& ep : r.explicit_bound) listening += " http_proxy=" + ep.to_string();
  for (const auto& ep : r.dns_bound) listening += " dns=" + ep.to_string();
  for (const auto& ep : r.admin_bound) listening += " admin=" + ep.to_string();
  if (r.control) listening += " control=" + r.cfg.listen.control;
  if (r.sandbox) listening += " sandbox=" + r.cfg.listen.sandbox;
  return "airlock: ready:" + listening + " policy=" + current->version() + " (" + r.cfg.file + ", " +
         std::to_string(current->rule_count()) + " rules) log=" + r.log_path +
         " threads=" + std::to_string(r.loops.size() + 1);
}

}  // namespace

// Everything that can fail is opened before anything runs: a failed step returns at once
// and the parts made so far are destroyed, so there is never a half-started daemon. Most
// steps read what earlier ones made; the order is not free.
boost::system::result<std::unique_ptr<instance>, startup_error> instance::create(const instance_options& options) {
  using result = boost::system::result<std::unique_ptr<instance>, startup_error>;
  auto fail = [](startup_error e) { return result(boost::system::in_place_error, std::move(e)); };

  auto p = std::make_unique<parts>();
  p->options = options;
  if (auto e = load_config(*p)) return fail(std::move(*e));
  if (auto e = open_decision_log(*p)) return fail(std::move(*e));
  if (auto e = open_policy_store_and_sessions(*p)) return fail(std::move(*e));
  if (auto e = open_resolver(*p)) return fail(std::move(*e));
  make_query_and_proxy_contexts(*p);
  if (auto e = load_inspection(*p)) return fail(std::move(*e));
  attach_process_finder(*p);

  if (auto e = bind_dns_listeners(*p)) return fail(std::move(*e));
  raise_descriptor_limit(*p);
  const unsigned loops = count_event_loops(*p);
  if (auto e = bind_tcp_listeners(*p, loops)) return fail(std::move(*e));
  if (auto e = open_other_loops(*p, loops)) return fail(std::move(*e));
  start_loop_grace(*p);
  if (auto e = open_control_socket(*p)) return fail(std::move(*e));
  if (auto e = open_sandbox_socket(*p)) return fail(std::move(*e));

  watch_own_addresses(*p);
  if (auto e = compile_policy(*p)) return fail(std::move(*e));
  restore_registered_sessions(*p);

  start_accepting(*p);
  start_admin_and_control(*p);
  start_upkeep(*p);
  p->ready = compose_ready_line(*p);
  return std::unique_ptr<instance>(new instance(std::move(p)));
}

instance::instance(std::unique_ptr<parts> p) : parts_(std::move(p)) {}
instance::~instance() = default;

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

}  // namespace airlock::daemon
