#include "launcher/sandbox.hpp"

#include "base/errno_text.hpp"
#include "base/small_file.hpp"
#include "launcher/bwrap_args.hpp"
#include "launcher/child.hpp"
#include "launcher/env_filter.hpp"
#include "launcher/host_view.hpp"
#include "launcher/netlink.hpp"
#include "launcher/netns.hpp"
#include "launcher/nft_apply.hpp"
#include "launcher/nft_rules.hpp"
#include "policy/units.hpp"

#include <fcntl.h>
#include <netinet/in.h>
#include <pwd.h>
#include <sys/mman.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <future>
#include <span>
#include <system_error>

namespace airlock::launcher {
namespace fs = std::filesystem;
namespace {

using clock = std::chrono::steady_clock;

void say(const std::string& line) { std::fprintf(stderr, "airlock: %s\n", line.c_str()); }

// True when something in this namespace already holds ADDRESS:PORT (our bind is refused):
// how the launcher checks that the daemon's listeners are where the redirect will send
// the sandbox's packets, without connecting to them (which would be logged as traffic).
bool port_taken(boost::asio::ip::address_v4 address, std::uint16_t port, int type) {
  base::unique_fd s(::socket(AF_INET, type | SOCK_CLOEXEC, 0));
  if (!s) return false;
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(port);
  sa.sin_addr.s_addr = htonl(address.to_uint());
  return ::bind(s.get(), reinterpret_cast<const sockaddr*>(&sa), sizeof sa) != 0 && errno == EADDRINUSE;
}

// A sealed in-memory file for bwrap's --ro-bind-data, read from its start.
base::result<base::unique_fd> memory_file(const char* name, const std::string& content) {
  base::unique_fd fd(::memfd_create(name, MFD_CLOEXEC));
  if (!fd)
    return base::result<base::unique_fd>(boost::system::in_place_error, std::string("memfd: ") + base::errno_text());
  if (::write(fd.get(), content.data(), content.size()) != static_cast<ssize_t>(content.size()) ||
      ::lseek(fd.get(), 0, SEEK_SET) != 0)
    return base::result<base::unique_fd>(boost::system::in_place_error,
                                         std::string("memfd write: ") + base::errno_text());
  return fd;
}

// A file that cannot be read reads as empty (and then holds no certificate).
std::string text_of(const fs::path& p) {
  auto text = base::read_file(p);
  return text ? std::move(*text) : std::string();
}

fs::path home_directory(std::span<const std::string> env) {
  for (const auto& e : env)
    if (e.starts_with("HOME=")) return e.substr(5);
  if (const passwd* pw = ::getpwuid(::getuid()); pw != nullptr && pw->pw_dir != nullptr) return pw->pw_dir;
  return {};
}

bool inside(const fs::path& p, const fs::path& dir) {
  const auto rel = p.lexically_relative(dir);
  return !rel.empty() && *rel.begin() != "..";
}

// Runs `f` on a helper thread (or, should no thread be available, when asked for the
// result). The future's destructor waits, so an early return never leaves it running.
template <typename F>
auto in_parallel(F f) {
  try {
    return std::async(std::launch::async, f);
  } catch (const std::system_error&) {
    return std::async(std::launch::deferred, f);
  }
}

class sandbox {
 public:
  explicit sandbox(const run_options& o) : o_(o), store_(o.state_dir) {}
  sandbox(const sandbox&) = delete;
  sandbox& operator=(const sandbox&) = delete;
  ~sandbox() { teardown(); }

  int run(const daemon_source& daemons);

 private:
  int refuse(std::string_view step, const std::string& why) {
    say(std::string(step) + ": " + why + "; CMD was not started");
    return exit_setup_failed;
  }
  base::result<void> plan_filesystem();
  base::result<void> make_cgroups();
  base::result<void> make_copy();
  base::result<void> make_network();
  base::result<void> ask_running_daemon(const daemon_source& daemons);
  base::result<void> reach_daemon(const daemon_source& daemons);
  base::result<void> stage_inspection_ca();
  base::result<void> install_rules();
  base::result<void> register_session();
  base::result<void> start_child();
  std::optional<int> pending_signal();
  void summarize(const child_outcome& outcome, int status, clock::duration took);
  void teardown();
  void mark(const char* what) {
    if (timings_) marks_.emplace_back(what, clock::now());
  }

  const run_options& o_;
  const bool timings_ = std::getenv("AIRLOCK_TIMINGS") != nullptr;
  std::vector<std::pair<const char*, clock::time_point>> marks_;
  state_store store_;
  base::unique_fd signals_;
  std::vector<std::string> parent_env_;
  fs::path home_, cwd_;
  std::optional<bind_entry> workdir_;
  std::vector<bind_entry> binds_;

  std::optional<sandbox_record> record_;
  boost::asio::ip::address_v4 gateway_, sandbox_ip_;
  std::optional<sandbox_cgroup> cgroup_;
  bool copy_made_ = false;
  std::optional<sandbox_netns> netns_;
  std::optional<rtnetlink> gateway_rtnl_;
  bool veth_made_ = false;
  int gateway_index_ = 0;
  daemon_link daemon_;
  control::listener_ports ports_;
  bool table_made_ = false;
  std::string session_;
  base::unique_fd ca_file_, ca_bundle_;  // with inspection: airlock's CA, the system roots plus it
  std::vector<base::unique_fd> files_;   // resolv.conf and CA data for bwrap
  base::unique_fd status_read_, status_write_;
  pid_t child_ = 0;
};

int sandbox::run(const daemon_source& daemons) {
  const auto started = clock::now();
  auto sig = take_signals();
  if (!sig) return refuse("signals", sig.error());
  signals_ = std::move(*sig);

  parent_env_ = current_environment();
  auto env = filter_environment(parent_env_, {o_.env, {}});
  if (!env) return refuse("environment", env.error());
  std::string path_var(default_path);
  for (const auto& e : *env)
    if (e.starts_with("PATH=")) path_var = e.substr(5);
  if (o_.command.empty()) return refuse("command", "no CMD given after --");
  if (auto cmd = find_command(o_.command.front(), path_var); !cmd) {
    say(cmd.error().message);
    return cmd.error().exit_status;
  }
  if (auto r = plan_filesystem(); !r) return refuse("filesystem", r.error());
  mark("checks");

  auto pool = address_pool::parse(o_.pool);
  if (!pool) return refuse("address pool", pool.error());
  sandbox_record wanted;
  wanted.gateway_netns = netns_identity();
  auto reserved = store_.reserve(*pool, wanted);
  if (!reserved) return refuse("address pool", reserved.error());
  record_ = *reserved;
  gateway_ = boost::asio::ip::make_address_v4(record_->gateway_ip);
  sandbox_ip_ = boost::asio::ip::make_address_v4(record_->sandbox_ip);
  mark("address");

  if (auto r = make_cgroups(); !r) return refuse("cgroup", r.error());
  mark("cgroups");
  if (auto r = make_copy(); !r) return refuse("working directory copy", r.error());
  {
    // The namespace and a running daemon's answer do not depend on each other: the
    // namespace is made on a helper thread meanwhile.
    auto network = in_parallel([this] { return make_network(); });
    auto asked = ask_running_daemon(daemons);
    if (auto r = network.get(); !r) return refuse("network", r.error());
    if (!asked) return refuse("daemon", asked.error());
  }
  mark("netns+veth, daemon");
  if (auto r = reach_daemon(daemons); !r) return refuse("daemon", r.error());
  mark("daemon checks");
  if (auto r = stage_inspection_ca(); !r) return refuse("inspection CA", r.error());
  if (ca_file_) mark("inspection CA");
  {
    // Nor do the gateway's table and the session.
    auto rules = in_parallel([this] { return install_rules(); });
    auto session = register_session();
    if (auto r = rules.get(); !r) return refuse("nftables", r.error());
    if (!session) return refuse("session", session.error());
  }
  mark("nft, session");
  if (auto s = pending_signal()) {
    say("interrupted before CMD started");
    return 128 + *s;
  }
  if (auto r = start_child(); !r) return refuse("bubblewrap", r.error());
  mark("spawn");
  say("session " + session_ + " started (sandbox " + record_->sandbox_ip + ", " + daemon_.description + ")");

  supervise_options so;
  so.signal_fd = signals_.get();
  so.status_fd = status_read_.get();
  so.timeout = o_.timeout;
  const auto outcome = supervise(child_, so);
  child_ = 0;
  mark("CMD");

  int status = 0;
  if (outcome.timed_out) status = exit_timed_out;
  else if (outcome.cmd_status) status = *outcome.cmd_status;
  else if (outcome.signal_received) status = 128 + *outcome.signal_received;
  else status = exit_setup_failed;  // bwrap gave up before CMD ran; it said why above
  summarize(outcome, status, clock::now() - started);
  mark("summary");
  teardown();
  if (timings_) {
    // AIRLOCK_TIMINGS=1: where a run's time goes (bench/run -s startup reads it).
    std::string line = "timings:";
    auto at = started;
    for (const auto& [what, when] : marks_) {
      char buf[64];
      std::snprintf(buf, sizeof buf, " %s %.2f ms,", what,
                    std::chrono::duration<double, std::milli>(when - at).count());
      line += buf;
      at = when;
    }
    line.pop_back();
    say(line);
  }
  return status;
}

base::result<void> sandbox::plan_filesystem() {
  home_ = home_directory(parent_env_);
  std::error_code ec;
  cwd_ = fs::current_path(ec);
  if (ec) return "cannot read the working directory: " + ec.message();
  if (o_.cwd != cwd_mode::none) {
    if (cwd_ == "/" || (!home_.empty() && (cwd_ == home_ || inside(home_, cwd_))))
      return "the working directory " + cwd_.string() +
             " is your home directory or contains it, and sharing it would show ~/.ssh and the like; "
             "run from a project directory, or pass --no-cwd";
    workdir_ = bind_entry{cwd_, cwd_, o_.cwd != cwd_mode::read_only};
  }
  for (auto [list, writable] : {std::pair{&o_.ro, false}, {&o_.rw, true}})
    for (const auto& d : *list) {
      auto real = fs::canonical(d, ec);
      if (ec) return std::string(writable ? "--rw " : "--ro ") + d.string() + ": " + ec.message();
      binds_.push_back({real, real, writable});
    }
  return {};
}

base::result<void> sandbox::make_cgroups() {
  // Only limits need cgroups; without any, the pid namespace alone holds the workload and
  // dies with it.
  if (!o_.limits.any()) return {};
  auto plan = plan_cgroups(record_->id, o_.limits);
  if (!plan) return plan.error();
  for (const auto& d : plan->dirs()) record_->cgroups.push_back(d.string());
  if (auto s = store_.save(*record_); !s) return s.error();
  auto cg = sandbox_cgroup::create(*plan, o_.limits);
  if (!cg) return cg.error();
  cgroup_.emplace(std::move(*cg));
  return {};
}

base::result<void> sandbox::make_copy() {
  if (o_.cwd != cwd_mode::copy) return {};
  const fs::path copy = fs::path("/var/tmp") / ("airlock-copy-" + record_->id);
  record_->copy_dir = copy.string();
  if (auto s = store_.save(*record_); !s) return s.error();
  copy_made_ = true;
  if (auto r = copy_tree(cwd_, copy); !r) return r.error();
  workdir_->source = copy;
  return {};
}

base::result<void> sandbox::make_network() {
  auto ns = create_netns(record_->netns);
  if (!ns) return ns.error();
  netns_.emplace(std::move(*ns));
  auto gw = rtnetlink::open();
  if (!gw) return gw.error();
  gateway_rtnl_.emplace(std::move(*gw));

  // Gateway side: the veth (its peer is born inside the sandbox as eth0) with the block's
  // first address. No forwarding is ever enabled: the nft table is the only way on.
  if (auto r = gateway_rtnl_->create_veth(record_->veth, "eth0", netns_->ns.get()); !r) return r.error();
  veth_made_ = true;
  auto gw_index = gateway_rtnl_->link_index(record_->veth);
  if (!gw_index) return gw_index.error();
  gateway_index_ = *gw_index;
  if (auto r = gateway_rtnl_->add_address(*gw_index, gateway_, address_block::prefix); !r) return r.error();
  if (auto r = gateway_rtnl_->link_up(*gw_index); !r) return r.error();

  // Sandbox side: eth0 with the second address, default route via the gateway.
  auto& sbx = netns_->rtnl;
  auto index = sbx.link_index("eth0");
  if (!index) return index.error();
  if (auto r = sbx.add_address(*index, sandbox_ip_, address_block::prefix); !r) return r.error();
  if (auto r = sbx.link_up(*index); !r) return r.error();
  ipv4_route def;
  def.gateway = gateway_;
  def.oif = *index;
  if (auto r = sbx.add_route(def); !r) return r.error();
  return {};
}

base::result<void> sandbox::ask_running_daemon(const daemon_source& daemons) {
  auto link = daemons.running();
  if (!link) return {};
  daemon_ = std::move(*link);
  auto ports = daemon_.api->listeners();
  if (!ports) return "ask " + daemon_.description + " for its listeners: " + ports.error();
  ports_ = *ports;
  return {};
}

base::result<void> sandbox::reach_daemon(const daemon_source& daemons) {
  if (!daemon_.api) {
    auto link = daemons.embedded(gateway_);
    if (!link) return link.error();
    daemon_ = std::move(*link);
    auto ports = daemon_.api->listeners();
    if (!ports) return "ask " + daemon_.description + " for its listeners: " + ports.error();
    ports_ = *ports;
  }
  record_->control = daemon_.control_socket;
  if (auto s = store_.save(*record_); !s) return s.error();
  if (!ports_.reachable_from_sandbox || ports_.proxy == 0 || ports_.dns == 0)
    return daemon_.description + " listens on loopback only, where a sandbox's redirected traffic cannot arrive; "
                                 "set listen.proxy and listen.dns to 0.0.0.0:PORT in its config";
  // The redirect sends the sandbox's packets to the gateway address of this namespace:
  // the daemon must be listening here, not in some other namespace.
  if (!port_taken(gateway_, ports_.proxy, SOCK_STREAM) || !port_taken(gateway_, ports_.dns, SOCK_DGRAM) ||
      (ports_.https != 0 && !port_taken(gateway_, ports_.https, SOCK_STREAM)))
    return daemon_.description + " has no proxy on TCP port " + std::to_string(ports_.proxy) +
           (ports_.https != 0 ? " (and " + std::to_string(ports_.https) + " for :443)" : std::string()) +
           " or DNS on UDP port " + std::to_string(ports_.dns) +
           " in this network namespace; run airlock run where the daemon runs";
  return {};
}

base::result<void> sandbox::stage_inspection_ca() {
  // The daemon terminates TLS for some rule: listeners() names its CA (GET /v1/info for a
  // running daemon, the config for an embedded one). Both files CMD gets are copied into
  // memfds now, not bound from the daemon's ca_dir (which holds the key too): one snapshot
  // per run, read-only, gone with the sandbox. SSL_CERT_FILE and its kin replace a client's
  // store, so they name the system roots plus airlock's CA (hosts that are not inspected
  // still verify); Node adds NODE_EXTRA_CA_CERTS to its own store, so that one is the CA.
  if (ports_.inspection_ca.empty()) return {};
  const fs::path ca_path = ports_.inspection_ca;
  const auto ca = text_of(ca_path);
  if (!has_pem_certificate(ca))
    return "cannot read a PEM certificate in " + ca_path.string() + ", the CA " + daemon_.description +
           " inspects with (a relative ca_dir is relative to the daemon's working directory)";
  const auto roots_path = system_ca_bundle();
  if (roots_path.empty())
    say("no system CA bundle found (/etc/ssl/certs/ca-certificates.crt and the like): SSL_CERT_FILE holds "
        "airlock's CA alone, so hosts that are not inspected will not verify");
  auto ca_fd = memory_file("airlock-ca.crt", ca);
  if (!ca_fd) return ca_fd.error();
  auto bundle_fd = memory_file("airlock-bundle.crt", ca_bundle(roots_path.empty() ? "" : text_of(roots_path), ca));
  if (!bundle_fd) return bundle_fd.error();
  ca_file_ = std::move(*ca_fd);
  ca_bundle_ = std::move(*bundle_fd);
  return {};
}

base::result<void> sandbox::install_rules() {
  gateway_rules g;
  g.iface = record_->veth;
  g.table = record_->nft_table;
  g.proxy_port = ports_.proxy;
  g.https_port = ports_.https;  // 0 (a daemon with one proxy port): :443 goes to the proxy port too
  g.dns_port = ports_.dns;
  auto text = render(g);
  if (!text) return text.error();
  if (auto r = nft_run(*text); !r) return r.error();
  table_made_ = true;
  return {};
}

base::result<void> sandbox::register_session() {
  control::session_request req;
  req.id = o_.session_id;
  req.sources = {record_->sandbox_ip + "/32"};
  req.policy = o_.policy;
  req.allow = o_.allow;
  req.labels = o_.labels;
  req.netns = record_->netns;
  auto id = daemon_.api->register_session(req);
  if (!id) return id.error();
  session_ = *id;
  record_->session = session_;
  return store_.save(*record_);
}

base::result<void> sandbox::start_child() {
  // resolv.conf points at the gateway, where the nft table sends port 53 to airlock's DNS.
  auto resolv_target = resolv_conf_target();
  if (!resolv_target) return resolv_target.error();
  auto resolv = memory_file("resolv.conf", "nameserver " + record_->gateway_ip + "\n");
  if (!resolv) return resolv.error();

  sandbox_spec spec;
  spec.bwrap = o_.bwrap;
  spec.system = system_entries();
  spec.masked = masked_files();
  spec.home = home_;
  spec.workdir = workdir_;
  spec.chdir = workdir_ ? cwd_ : home_;
  spec.binds = binds_;
  spec.files.push_back({resolv->get(), *resolv_target});
  env_request env_req{o_.env, {{"AIRLOCK_SESSION", session_}}};
  if (ca_file_) {
    spec.files.push_back({ca_file_.get(), std::string(sandbox_ca_file)});
    spec.files.push_back({ca_bundle_.get(), std::string(sandbox_ca_bundle)});
    files_.push_back(std::move(ca_file_));
    files_.push_back(std::move(ca_bundle_));
    // npm_config_cafile too: a global npmrc's cafile (Debian images with NodeSource set one)
    // replaces Node's store, NODE_EXTRA_CA_CERTS included.
    for (const char* var :
         {"SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "GIT_SSL_CAINFO", "CURL_CA_BUNDLE", "npm_config_cafile"})
      env_req.forced.emplace_back(var, std::string(sandbox_ca_bundle));
    env_req.forced.emplace_back("NODE_EXTRA_CA_CERTS", std::string(sandbox_ca_file));
  }
  files_.push_back(std::move(*resolv));
  auto env = filter_environment(parent_env_, env_req);
  if (!env) return env.error();

  int status_pipe[2];
  if (::pipe2(status_pipe, O_CLOEXEC) != 0) return "pipe: " + base::errno_text();
  status_read_.reset(status_pipe[0]);
  status_write_.reset(status_pipe[1]);
  ::fcntl(status_read_.get(), F_SETFL, O_NONBLOCK);
  spec.status_fd = status_write_.get();
  spec.command = o_.command;

  child_spec c;
  c.executable = o_.bwrap.string();
  c.argv = bwrap_argv(spec);
  c.envp = std::move(*env);
  if (cgroup_) c.cgroup_procs = cgroup_->procs_files();
  c.netns_fd = netns_->ns.get();
  c.inherit_fds.push_back(status_write_.get());
  for (const auto& f : files_) c.inherit_fds.push_back(f.get());
  auto pid = spawn_child(c);
  if (!pid) return pid.error();
  child_ = *pid;
  status_write_.reset();  // bwrap holds it now; EOF tells us it is gone
  files_.clear();
  return {};
}

std::optional<int> sandbox::pending_signal() {
  signalfd_siginfo si{};
  std::optional<int> got;
  while (::read(signals_.get(), &si, sizeof si) == static_cast<ssize_t>(sizeof si))
    if (si.ssi_signo != SIGCHLD && !got) got = static_cast<int>(si.ssi_signo);
  return got;
}

void sandbox::summarize(const child_outcome& outcome, int status, clock::duration took) {
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(took).count();
  char after[48];
  std::snprintf(after, sizeof after, "ended after %.1fs: ", static_cast<double>(ms) / 1000.0);
  std::string how = after;
  if (outcome.timed_out) how += "timed out (--timeout " + policy::format_duration(*o_.timeout) + "), ";
  else if (auto hit = cgroup_ ? cgroup_->limit_hit() : std::nullopt) how += "stopped by the " + *hit + ", ";
  else if (!outcome.cmd_status && !outcome.signal_received) how += "CMD did not start (bwrap said why above), ";
  how += "exit " + std::to_string(status);

  std::string counts;
  if (daemon_.api) {
    auto totals = daemon_.api->remove_session(session_);
    session_.clear();
    if (totals)
      counts = "; " + std::to_string(totals->connections_allowed) + " connections allowed, " +
               std::to_string(totals->connections_denied) + " denied, " + std::to_string(totals->dns_queries) +
               " DNS queries";
    else counts = "; totals unavailable (" + totals.error() + ")";
  }
  say("session " + record_->session + " " + how + counts + "; details: airlock explain " + record_->session);
}

void sandbox::teardown() {
  std::vector<std::string> problems;
  if (child_ > 0) {
    // A failure after spawning (none today) must still not leave CMD running.
    ::kill(child_, SIGKILL);
    ::waitpid(child_, nullptr, 0);
    child_ = 0;
  }
  if (cgroup_) cgroup_->kill();
  if (daemon_.api && !session_.empty()) {
    if (auto r = daemon_.api->remove_session(session_); !r)
      problems.push_back("remove session " + session_ + ": " + r.error());
    session_.clear();
  }
  daemon_.api.reset();  // an embedded daemon drains and stops here
  mark("daemon stop");
  if (table_made_) {
    if (auto r = nft_delete_table(record_->nft_table, /*defer_close=*/true); !r) problems.push_back(r.error());
    table_made_ = false;
    mark("nft delete");
  }
  if (veth_made_ && gateway_rtnl_) {
    // The pair goes with the sandbox's namespace, which the kernel destroys (in the
    // background) once the pin and our descriptors are gone. Deleting it here would cost
    // about 20 ms of RCU grace periods on every run. Its address goes now, though: the
    // next sandbox may get the same block, and two interfaces holding the same /30 would
    // split its routes.
    if (gateway_index_ > 0)
      if (auto r = gateway_rtnl_->delete_address(gateway_index_, gateway_, address_block::prefix); !r)
        problems.push_back(r.error());
    veth_made_ = false;
    mark("address delete");
  }
  if (netns_) {
    netns_.reset();
    if (auto r = remove_netns_pin(record_->netns); !r) problems.push_back(r.error());
    mark("netns unpin");
  }
  if (cgroup_) {
    if (auto r = cgroup_->remove(); !r) problems.push_back(r.error());
    cgroup_.reset();
  }
  if (copy_made_) {
    std::error_code ec;
    fs::remove_all(record_->copy_dir, ec);
    if (ec) problems.push_back("remove " + record_->copy_dir + ": " + ec.message());
    copy_made_ = false;
  }
  if (record_) {
    if (problems.empty()) store_.remove(record_->id);
    else
      for (const auto& p : problems) say("cleanup: " + p + "; 'airlock gc' will retry");
    record_.reset();
  }
}

}  // namespace

int run_sandbox(const run_options& options, const daemon_source& daemons) {
  sandbox s(options);
  return s.run(daemons);
}

}  // namespace airlock::launcher
