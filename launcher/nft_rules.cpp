#include "launcher/nft_rules.hpp"

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

namespace airlock::launcher {
namespace {

bool safe_name(const std::string& s, std::size_t max) {
  return !s.empty() && s.size() <= max && std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
           c == '.';
  });
}

// What is wrong with a set of airlock's ports, or nothing.
std::string ports_problem(std::uint16_t proxy, std::uint16_t dns, std::uint16_t https) {
  if (proxy == 0 || dns == 0 || proxy == dns) return "proxy and DNS ports must be distinct and non-zero";
  if (https != 0 && (https == proxy || https == dns)) return "the HTTPS port must differ from the proxy and DNS ports";
  return {};
}

}  // namespace

base::result<std::string> render(const gateway_rules& g) {
  const auto refuse = base::fail<std::string>;
  if (!safe_name(g.iface, 15)) return refuse("interface name '" + g.iface + "': expected 1-15 of [A-Za-z0-9_.-]");
  std::string table = g.table;
  if (table.empty()) {
    table = "airlock_" + g.iface;
    std::replace_if(
        table.begin(), table.end(), [](char c) { return c == '-' || c == '.'; }, '_');
  }
  if (!safe_name(table, 64)) return refuse("table name '" + table + "': expected 1-64 of [A-Za-z0-9_.-]");
  if (auto problem = ports_problem(g.proxy_port, g.dns_port, g.https_port); !problem.empty()) return refuse(problem);
  if (g.https_port != 0 && g.tproxy)
    return refuse("an HTTPS port is for REDIRECT: TPROXY keeps each connection's own destination");

  const std::string in = "    iifname \"" + g.iface + "\" ";
  const std::string proxy = std::to_string(g.proxy_port);
  const std::string dns = std::to_string(g.dns_port);
  const std::string https = std::to_string(g.https_port);
  char mark[16];
  std::snprintf(mark, sizeof mark, "0x%x", tproxy_mark);
  const std::string table_id = std::to_string(tproxy_mark);

  // The sandbox's only way out is airlock's two sockets: DNS goes to the DNS server,
  // every other TCP connection to the proxy, and nothing else is accepted or forwarded.
  // REDIRECT: `ct status dnat` admits only redirected packets, so a sandbox cannot address
  // the gateway's own ports (admin, control, ssh) even by aiming at the proxy's port.
  // TPROXY: TCP is diverted before routing, unchanged, to airlock's transparent socket and
  // marked; only marked TCP is admitted (DNS is still redirected: UDP has no transparent
  // listener here), and policy routing delivers the marked packets locally.
  std::string out;
  if (g.tproxy) {
    out += std::string("# TPROXY needs policy routing for the mark, once per network namespace:\n") +
           "#   ip rule add fwmark " + mark + " lookup " + table_id + "\n" +
           "#   ip route add local 0.0.0.0/0 dev lo table " + table_id + "\n" + "#   ip -6 rule add fwmark " + mark +
           " lookup " + table_id + "\n" + "#   ip -6 route add local ::/0 dev lo table " + table_id + "\n";
  }
  out += "table inet " + table + " {\n";
  // Reverse path first, before conntrack, NAT or TPROXY see the packet: what arrives on the
  // sandbox's link must come from an address routed back through that link, so a sandbox
  // that takes a neighbour's address (behind another link of this gateway) is dropped, not
  // judged as the neighbour's session. Both families; no address needs to be known here.
  out += "  chain antispoof {\n"
         "    type filter hook prerouting priority raw; policy accept;\n" +
         in + "fib saddr . iif oif missing counter drop\n" + "  }\n";
  if (g.tproxy) {
    out += "  chain divert {\n"
           "    type filter hook prerouting priority mangle; policy accept;\n" +
           in + "meta nfproto ipv4 tcp dport != 53 tproxy ip to :" + proxy + " meta mark set " + mark + " accept\n" +
           in + "meta nfproto ipv6 tcp dport != 53 tproxy ip6 to :" + proxy + " meta mark set " + mark + " accept\n" +
           "  }\n";
  }
  const std::string proxy_ports = g.https_port != 0 ? "{ " + proxy + ", " + https + " }" : proxy;
  const std::string admit_tcp = g.tproxy ? in + "meta mark " + mark + " meta l4proto tcp accept\n"
                                         : in + "ct status dnat tcp dport " + proxy_ports + " accept\n";
  out += "  chain prerouting {\n"
         "    type nat hook prerouting priority dstnat; policy accept;\n" +
         in + "udp dport 53 redirect to :" + dns + "\n" + in + "tcp dport 53 redirect to :" + dns + "\n";
  if (g.https_port != 0) out += in + "tcp dport 443 redirect to :" + https + "\n";
  if (!g.tproxy) out += in + "meta l4proto tcp redirect to :" + proxy + "\n";
  out += "  }\n"
         "  chain input {\n"
         "    type filter hook input priority filter; policy accept;\n" +
         admit_tcp + in + "ct status dnat meta l4proto { tcp, udp } th dport " + dns + " accept\n" +
         // IPv6 needs neighbour discovery to reach the gateway at all (what ARP is to
         // IPv4, which nft never sees); hop limit 255 means it came from the link itself.
         in + "icmpv6 type { nd-neighbor-solicit, nd-neighbor-advert } ip6 hoplimit 255 accept\n" + in +
         "counter drop\n" +
         "  }\n"
         "  chain forward {\n"
         "    type filter hook forward priority filter; policy accept;\n" +
         in + "counter drop\n" + "    oifname \"" + g.iface + "\" counter drop\n" +
         "  }\n"
         "}\n";
  return base::result<std::string>(boost::system::in_place_value, std::move(out));
}

base::result<std::string> render(const sidecar_rules& s) {
  const auto refuse = base::fail<std::string>;
  if (s.airlock_uid == 0)
    return refuse("airlock's uid 0 would exempt every root process of the namespace: run airlock as a uid of its own");
  if (!safe_name(s.table, 64)) return refuse("table name '" + s.table + "': expected 1-64 of [A-Za-z0-9_.-]");
  if (auto problem = ports_problem(s.proxy_port, s.dns_port, s.https_port); !problem.empty()) return refuse(problem);

  const std::string skuid = "meta skuid " + std::to_string(s.airlock_uid);
  const std::string proxy = std::to_string(s.proxy_port);
  const std::string dns = std::to_string(s.dns_port);
  // Locally sent packets meet the output hook after their route was chosen, so `oifname
  // "lo"` names loopback destinations. Every chain of the hook sees that first route's
  // device, also after REDIRECT sent the packet to loopback: the filter chain knows a
  // redirected packet by its conntrack status (dnat), not by its device. Packets without a
  // socket (the kernel's own: neighbour discovery, a TIME_WAIT socket's ACK) carry no uid:
  // established connections and neighbour discovery pass by their own rules.
  std::vector<std::string> steer = {skuid + " return", "udp dport 53 redirect to :" + dns,
                                    "tcp dport 53 redirect to :" + dns, "oifname \"lo\" return"};
  if (s.https_port != 0) steer.push_back("tcp dport 443 redirect to :" + std::to_string(s.https_port));
  steer.push_back("meta l4proto tcp redirect to :" + proxy);
  const std::vector<std::string> guard = {
      skuid + " accept",
      "ct status dnat accept",
      "oifname \"lo\" accept",
      "ct state established,related accept",
      "icmpv6 type { nd-neighbor-solicit, nd-neighbor-advert, nd-router-solicit } ip6 hoplimit 255 accept",
      "counter drop",
  };
  auto chain = [](const std::string& name, const std::string& type, const std::vector<std::string>& rules) {
    std::string text = "  chain " + name + " {\n    " + type + "\n";
    for (const auto& r : rules) text += "    " + r + "\n";
    return text + "  }\n";
  };
  std::string out = "table inet " + s.table + " {\n" +
                    chain("steer", "type nat hook output priority -100; policy accept;", steer) +
                    chain("guard", "type filter hook output priority filter; policy accept;", guard) + "}\n";
  return base::result<std::string>(boost::system::in_place_value, std::move(out));
}

}  // namespace airlock::launcher
