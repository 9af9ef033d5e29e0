#include "base/unique_fd.hpp"
#include "launcher/host_view.hpp"
#include "launcher/nft_apply.hpp"
#include "launcher/nft_rules.hpp"
#include "launcher/sandbox_parts.hpp"

#include <netinet/in.h>
#include <pwd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <span>
#include <system_error>

namespace airlock::launcher {
namespace {

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

fs::path home_directory(std::span<const std::string> env, uid_t uid) {
  for (const auto& e : env)
    if (e.starts_with("HOME=")) return e.substr(5);
  if (const passwd* pw = ::getpwuid(uid); pw != nullptr && pw->pw_dir != nullptr) return pw->pw_dir;
  return {};
}

// True when `p` names the file `fd` holds: a path the caller opened, as this process sees it.
bool same_file(const fs::path& p, int fd) {
  struct stat a {
  }, b{};
  return fd >= 0 && ::stat(p.c_str(), &a) == 0 && ::fstat(fd, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

bool inside(const fs::path& p, const fs::path& dir) {
  const auto rel = p.lexically_relative(dir);
  return !rel.empty() && *rel.begin() != "..";
}

}  // namespace

base::result<void> sandbox::plan_filesystem() {
  home_ = home_directory(parent_env_, o_.caller ? o_.caller->uid : ::getuid());
  std::error_code ec;
  cwd_ = fs::current_path(ec);
  // The daemon entered the caller's directory through the caller's descriptor; in a service
  // with a private /tmp or a hidden /home that directory has no path here.
  if (o_.caller && o_.cwd != cwd_mode::none && (ec || !same_file(cwd_, o_.caller->cwd_fd)))
    return "the working directory is not visible to the daemon (its service has a private /tmp and sees only "
           "/home, /srv and the system read-write); run from a directory there, or pass --no-cwd";
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
      if (o_.caller && std::none_of(o_.caller->path_fds.begin(), o_.caller->path_fds.end(),
                                    [&](int fd) { return same_file(real, fd); }))
        return std::string(writable ? "--rw " : "--ro ") + d.string() +
               ": not a path you opened (the daemon shows a sandbox only what its caller can reach)";
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
  if (o_.caller) {
    // Who asked, in every decision line of the session, and not the caller's to choose.
    std::erase_if(req.labels, [](const auto& l) { return l.first == "user"; });
    req.labels.emplace_back("user", o_.caller->user);
  }
  req.netns = record_->netns;
  auto id = daemon_.api->register_session(req);
  if (!id) return id.error();
  session_ = *id;
  record_->session = session_;
  return store_.save(*record_);
}

}  // namespace airlock::launcher
