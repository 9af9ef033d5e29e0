#include "launcher/attach.hpp"

#include "base/errno_text.hpp"
#include "launcher/gc.hpp"
#include "launcher/netlink.hpp"
#include "launcher/netns.hpp"
#include "launcher/nft_apply.hpp"
#include "launcher/nft_rules.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cstring>
#include <sstream>

namespace airlock::launcher {
namespace {

constexpr const char* inner_iface = "airlock0";

using base::fail;

base::result<void> disable_ipv6_here() {
  for (const char* path :
       {"/proc/sys/net/ipv6/conf/all/disable_ipv6", "/proc/sys/net/ipv6/conf/default/disable_ipv6"}) {
    base::unique_fd fd(::open(path, O_WRONLY | O_CLOEXEC));
    if (!fd) {
      if (errno == ENOENT) continue;
      return std::string("open ") + path + ": " + base::errno_text();
    }
    if (::write(fd.get(), "1", 1) != 1) return std::string("write ") + path + ": " + base::errno_text();
  }
  return {};
}

// Inside the attached namespace: remove the guard and airlock0 (the pair and the route
// through it go with it), then put the saved default routes back.
base::result<void> undo_inside(const sandbox_record& r, int target_fd) {
  return run_in_netns(target_fd, [&]() -> base::result<void> {
    std::string problems;
    if (!r.guard_table.empty())
      if (auto t = nft_delete_table(r.guard_table); !t) problems += t.error() + "; ";
    auto nl = rtnetlink::open();
    if (!nl) return nl.error();
    if (auto d = nl->delete_link(inner_iface); !d) problems += d.error() + "; ";
    for (const auto& saved : r.saved_routes) {
      std::istringstream in(saved);
      std::string gw;
      ipv4_route route;
      in >> gw >> route.oif;
      boost::system::error_code ec;
      route.gateway = boost::asio::ip::make_address_v4(gw, ec);
      if (ec) continue;
      if (auto a = nl->add_route(route); !a && a.error().find("File exists") == std::string::npos)
        problems += "restore default route via " + gw + ": " + a.error() + "; ";
    }
    if (!problems.empty()) return problems.substr(0, problems.size() - 2);
    return {};
  });
}

}  // namespace

std::string guard_ruleset(const std::string& table, const std::string& iface, const std::string& gateway_ip,
                          const std::string& address) {
  const std::string out = "oifname \"" + iface + "\"";
  // The workload may only send through airlock0 (IPv4: airlock0 has no IPv6) or to
  // itself on lo. Its DNS, whatever server resolv.conf names, goes to the gateway, where
  // the gateway table hands it to airlock's DNS; such a packet chose its source address
  // for its original route, so it leaves with airlock0's (the session is keyed by it).
  // The filter sits in postrouting, not output: output sees the device chosen before the
  // DNS rewrite rerouted the packet. Nothing is forwarded.
  return "table inet " + table + " {\n" +
         "  chain dns {\n"
         "    type nat hook output priority -100; policy accept;\n"
         "    oifname != \"lo\" udp dport 53 dnat ip to " +
         gateway_ip + "\n" + "    oifname != \"lo\" tcp dport 53 dnat ip to " + gateway_ip + "\n" +
         "  }\n"
         "  chain source {\n"
         "    type nat hook postrouting priority srcnat; policy accept;\n"
         "    " +
         out + " ip saddr != " + address + " snat ip to " + address + "\n" +
         "  }\n"
         "  chain egress {\n"
         "    type filter hook postrouting priority filter; policy drop;\n"
         "    oifname \"lo\" accept\n"
         "    " +
         out + " meta nfproto ipv4 accept\n" +
         "  }\n"
         "  chain forward {\n"
         "    type filter hook forward priority filter; policy drop;\n"
         "  }\n"
         "}\n";
}

base::result<sandbox_record> attach(const attach_options& o, control::session_api& daemon, const state_store& store) {
  auto target = open_netns(o.netns);
  if (!target) return fail<sandbox_record>(target.error());
  const auto target_id = netns_identity(target->get());
  for (const auto& r : store.list())
    if (r.kind == "attach" && r.netns_id == target_id)
      return fail<sandbox_record>(o.netns + " is already attached (session " + r.session + "); airlock detach first");
  if (target_id == netns_identity()) return fail<sandbox_record>(o.netns + " is this namespace, the gateway itself");

  auto pool = address_pool::parse(o.pool);
  if (!pool) return fail<sandbox_record>("address pool: " + pool.error());
  sandbox_record wanted;
  wanted.kind = "attach";
  wanted.netns = o.netns;
  wanted.netns_id = target_id;
  wanted.gateway_netns = netns_identity();
  wanted.control = o.control;
  auto reserved = store.reserve(*pool, wanted);
  if (!reserved) return fail<sandbox_record>("address pool: " + reserved.error());
  sandbox_record r = *reserved;
  r.guard_table = guard_table_for(r.id);
  const auto gateway = boost::asio::ip::make_address_v4(r.gateway_ip);
  const auto address = boost::asio::ip::make_address_v4(r.sandbox_ip);

  bool session_made = false, veth_made = false;
  auto undo = [&](const std::string& step, const std::string& why) {
    if (session_made) (void)daemon.remove_session(r.session);
    if (veth_made) (void)undo_inside(r, target->get());  // never an airlock0 that was there before
    std::vector<std::string> ignored;
    (void)remove_gateway_side(r, ignored);
    store.remove(r.id);
    return fail<sandbox_record>(step + ": " + why);
  };
  if (auto s = store.save(r); !s) return undo("state", s.error());

  auto gw = rtnetlink::open();
  if (!gw) return undo("veth", gw.error());
  if (auto v = gw->create_veth(r.veth, inner_iface, target->get()); !v) return undo("veth", v.error());
  veth_made = true;
  auto index = gw->link_index(r.veth);
  if (!index) return undo("veth", index.error());
  if (auto a = gw->add_address(*index, gateway, address_block::prefix); !a) return undo("veth", a.error());
  if (auto u = gw->link_up(*index); !u) return undo("veth", u.error());

  std::vector<ipv4_route> saved;
  auto inside = run_in_netns(target->get(), [&]() -> base::result<void> {
    if (auto v6 = disable_ipv6_here(); !v6) return "disable IPv6: " + v6.error();
    auto nl = rtnetlink::open();
    if (!nl) return nl.error();
    auto i = nl->link_index(inner_iface);
    if (!i) return i.error();
    if (auto a = nl->add_address(*i, address, address_block::prefix); !a) return a.error();
    if (auto u = nl->link_up(*i); !u) return u.error();
    auto routes = nl->default_routes();
    if (!routes) return routes.error();
    saved = *routes;
    for (const auto& old : saved)
      if (auto d = nl->delete_route(old); !d) return d.error();
    ipv4_route def;
    def.gateway = gateway;
    def.oif = *i;
    if (auto a = nl->add_route(def); !a) return a.error();
    return nft_run(guard_ruleset(r.guard_table, inner_iface, r.gateway_ip, r.sandbox_ip));
  });
  for (const auto& old : saved) r.saved_routes.push_back(old.gateway.to_string() + " " + std::to_string(old.oif));
  if (auto s = store.save(r); !s) return undo("state", s.error());
  if (!inside) return undo("inside " + o.netns, inside.error());

  auto ports = daemon.listeners();
  if (!ports) return undo("daemon", ports.error());
  if (!ports->reachable_from_sandbox)
    return undo("daemon", "its listeners are bound to loopback only; set listen.proxy and listen.dns to 0.0.0.0:PORT");
  gateway_rules g;
  g.iface = r.veth;
  g.table = r.nft_table;
  g.proxy_port = ports->proxy;
  g.https_port = ports->https;  // a second listen.proxy port takes :443; 0: the proxy port does
  g.dns_port = ports->dns;
  auto text = render(g);
  if (!text) return undo("nftables", text.error());
  if (auto n = nft_run(*text); !n) return undo("nftables", n.error());

  control::session_request req;
  req.id = o.session_id;
  req.sources = {r.sandbox_ip + "/32"};
  req.policy = o.policy;
  req.allow = o.allow;
  req.labels = o.labels;
  // The daemon wants a path (it opens the namespace to attribute connections to processes).
  req.netns = o.netns.find('/') == std::string::npos ? std::string(netns_dir) + "/" + o.netns : o.netns;
  auto id = daemon.register_session(req);
  if (!id) return undo("session", id.error());
  session_made = true;
  r.session = *id;
  if (auto s = store.save(r); !s) return undo("state", s.error());
  return r;
}

base::result<sandbox_record> detach(
    const std::string& netns,
    const std::function<base::result<void>(const std::string&, const std::string&)>& end_session,
    std::vector<std::string>* warnings, const state_store& store) {
  auto target = open_netns(netns);
  const auto id = target ? netns_identity(target->get()) : std::string();
  std::optional<sandbox_record> found;
  for (const auto& r : store.list())
    if (r.kind == "attach" && ((!id.empty() && r.netns_id == id) || (id.empty() && r.netns == netns))) found = r;
  if (!found) return fail<sandbox_record>(netns + " is not attached" + (target ? "" : " (" + target.error() + ")"));
  const auto& r = *found;
  std::string problems;
  // A daemon that restarted has forgotten the session: a warning, not a reason to keep
  // the namespace guarded with nobody answering.
  if (!r.session.empty() && !r.control.empty())
    if (auto e = end_session(r.control, r.session); !e && warnings != nullptr)
      warnings->push_back("end session " + r.session + ": " + e.error());
  if (target)
    if (auto u = undo_inside(r, target->get()); !u) problems += u.error() + "; ";
  std::vector<std::string> removed;
  if (auto g = remove_gateway_side(r, removed); !g) problems += g.error() + "; ";
  if (!problems.empty()) return fail<sandbox_record>(problems.substr(0, problems.size() - 2));
  store.remove(r.id);
  return r;
}

}  // namespace airlock::launcher
