#include "launcher/nft_rules.hpp"

#include <doctest/doctest.h>

#include <sstream>
#include <string>
#include <vector>

using airlock::launcher::gateway_rules;
using airlock::launcher::render;

namespace {

// The rules of chain `name`, in order, each without its indentation.
std::vector<std::string> chain_rules(const std::string& table, const std::string& name) {
  std::vector<std::string> rules;
  std::istringstream in(table);
  std::string line;
  bool inside = false;
  while (std::getline(in, line)) {
    const auto start = line.find_first_not_of(' ');
    const std::string rule = start == std::string::npos ? "" : line.substr(start);
    if (rule == "chain " + name + " {") inside = true;
    else if (inside && rule == "}") break;
    else if (inside && !rule.starts_with("type ")) rules.push_back(rule);
  }
  return rules;
}

}  // namespace

TEST_CASE("the gateway table redirects DNS and TCP and drops everything else") {
  gateway_rules g;
  g.iface = "al-g0";
  auto r = render(g);
  REQUIRE(r.has_value());
  const std::string& t = *r;
  CHECK(t.starts_with("table inet airlock_al_g0 {\n"));
  // Each chain whole and in order. DNS before the catch-all TCP redirect, so TCP 53 reaches
  // the DNS server.
  CHECK(chain_rules(t, "prerouting") == std::vector<std::string>{
                                            "iifname \"al-g0\" udp dport 53 redirect to :15053",
                                            "iifname \"al-g0\" tcp dport 53 redirect to :15053",
                                            "iifname \"al-g0\" meta l4proto tcp redirect to :15001",
                                        });
  // Nothing from the sandbox reaches the gateway itself but what was redirected to airlock's
  // two ports, and neighbour discovery (IPv6 could not reach the gateway at all without it);
  // the drop ends the chain, so nothing after it can open anything.
  CHECK(chain_rules(t, "input") ==
        std::vector<std::string>{
            "iifname \"al-g0\" ct status dnat tcp dport 15001 accept",
            "iifname \"al-g0\" ct status dnat meta l4proto { tcp, udp } th dport 15053 accept",
            "iifname \"al-g0\" icmpv6 type { nd-neighbor-solicit, nd-neighbor-advert } ip6 hoplimit 255 accept",
            "iifname \"al-g0\" counter drop",
        });
  // And nothing is forwarded either way: no accept at all.
  CHECK(chain_rules(t, "forward") == std::vector<std::string>{
                                         "iifname \"al-g0\" counter drop",
                                         "oifname \"al-g0\" counter drop",
                                     });
}

TEST_CASE("the TPROXY variant diverts TCP unchanged, still redirects DNS, and admits only what it marked") {
  gateway_rules g;
  g.iface = "al-g0";
  g.proxy_port = 15002;
  g.tproxy = true;
  auto r = render(g);
  REQUIRE(r.has_value());
  const std::string& t = *r;
  CHECK(t.find("ip rule add fwmark 0x1a1 lookup 417") != std::string::npos);
  CHECK(t.find("type filter hook prerouting priority mangle") != std::string::npos);
  CHECK(t.find("iifname \"al-g0\" meta nfproto ipv4 tcp dport != 53 tproxy ip to :15002 meta mark set 0x1a1 accept") !=
        std::string::npos);
  CHECK(t.find("tproxy ip6 to :15002") != std::string::npos);
  CHECK(t.find("redirect to :15002") == std::string::npos);  // TCP is never NATed
  CHECK(chain_rules(t, "prerouting") == std::vector<std::string>{
                                            "iifname \"al-g0\" udp dport 53 redirect to :15053",
                                            "iifname \"al-g0\" tcp dport 53 redirect to :15053",
                                        });
  // Only what the divert chain marked (TCP on its way to airlock's listener) and DNS pass.
  CHECK(chain_rules(t, "input") ==
        std::vector<std::string>{
            "iifname \"al-g0\" meta mark 0x1a1 meta l4proto tcp accept",
            "iifname \"al-g0\" ct status dnat meta l4proto { tcp, udp } th dport 15053 accept",
            "iifname \"al-g0\" icmpv6 type { nd-neighbor-solicit, nd-neighbor-advert } ip6 hoplimit 255 accept",
            "iifname \"al-g0\" counter drop",
        });
  CHECK(chain_rules(t, "forward") == std::vector<std::string>{
                                         "iifname \"al-g0\" counter drop",
                                         "oifname \"al-g0\" counter drop",
                                     });
}

TEST_CASE("an HTTPS port keeps :443 on a listener of its own, and is admitted like the proxy port") {
  gateway_rules g;
  g.iface = "al-g0";
  g.https_port = 15443;
  auto r = render(g);
  REQUIRE(r.has_value());
  const std::string& t = *r;
  // Before the catch-all, which takes every other port.
  CHECK(chain_rules(t, "prerouting") == std::vector<std::string>{
                                            "iifname \"al-g0\" udp dport 53 redirect to :15053",
                                            "iifname \"al-g0\" tcp dport 53 redirect to :15053",
                                            "iifname \"al-g0\" tcp dport 443 redirect to :15443",
                                            "iifname \"al-g0\" meta l4proto tcp redirect to :15001",
                                        });
  CHECK(chain_rules(t, "input").front() == "iifname \"al-g0\" ct status dnat tcp dport { 15001, 15443 } accept");
  CHECK(chain_rules(t, "input").back() == "iifname \"al-g0\" counter drop");

  g.https_port = 15001;
  CHECK_FALSE(render(g).has_value());  // the same port would mix them again
  g.https_port = 15443;
  g.tproxy = true;
  CHECK_FALSE(render(g).has_value());  // TPROXY keeps each connection's own four-tuple
}

TEST_CASE("names that could smuggle nft syntax are refused") {
  gateway_rules g;
  g.iface = "eth0\" accept #";
  CHECK_FALSE(render(g).has_value());
  g.iface = "averyveryverylongname";
  CHECK_FALSE(render(g).has_value());
  g.iface = "veth0";
  g.table = "t; flush ruleset";
  CHECK_FALSE(render(g).has_value());
  g.table = "";
  g.dns_port = g.proxy_port;
  CHECK_FALSE(render(g).has_value());
}

TEST_CASE("before anything else, the sandbox's link drops what does not route back through it") {
  for (const bool tproxy : {false, true}) {
    CAPTURE(tproxy);
    gateway_rules g;
    g.iface = "al-g0";
    g.tproxy = tproxy;
    auto r = render(g);
    REQUIRE(r.has_value());
    const std::string& t = *r;
    const auto chain = t.find("  chain antispoof {\n    type filter hook prerouting priority raw; policy accept;\n"
                              "    iifname \"al-g0\" fib saddr . iif oif missing counter drop\n  }\n");
    REQUIRE(chain != std::string::npos);
    // The table's first chain: raw runs before TPROXY's mangle, conntrack and NAT anyway,
    // but a reader of the table should meet it first too.
    CHECK(chain < t.find("chain prerouting"));
    const bool before_divert = t.find("chain divert") == std::string::npos || chain < t.find("chain divert");
    CHECK(before_divert);
  }
}

TEST_CASE("the sidecar table: airlock's uid goes out as it is, the rest's TCP and DNS go to airlock, nothing else") {
  airlock::launcher::sidecar_rules s;
  s.airlock_uid = 1337;
  s.https_port = 15443;
  auto r = render(s);
  REQUIRE(r.has_value());
  CHECK(r->starts_with("table inet airlock_sidecar {\n"));
  CHECK(r->find("type nat hook output priority -100; policy accept;") != std::string::npos);
  CHECK(r->find("type filter hook output priority filter; policy accept;") != std::string::npos);
  // Each chain whole and in order: airlock's exemption first, DNS redirected before the
  // loopback exemption (a loopback resolver is no way around airlock's DNS), every other
  // TCP redirected last.
  CHECK(chain_rules(*r, "steer") == std::vector<std::string>{
                                        "meta skuid 1337 return",
                                        "udp dport 53 redirect to :15053",
                                        "tcp dport 53 redirect to :15053",
                                        "oifname \"lo\" return",
                                        "tcp dport 443 redirect to :15443",
                                        "meta l4proto tcp redirect to :15001",
                                    });
  // Nothing the workload sends leaves the namespace but what was redirected to airlock,
  // loopback, replies on connections that exist, and neighbour discovery; the drop ends it.
  CHECK(chain_rules(*r, "guard") ==
        std::vector<std::string>{
            "meta skuid 1337 accept",
            "ct status dnat accept",
            "oifname \"lo\" accept",
            "ct state established,related accept",
            "icmpv6 type { nd-neighbor-solicit, nd-neighbor-advert, nd-router-solicit } ip6 hoplimit 255 accept",
            "counter drop",
        });
}

TEST_CASE("the sidecar table refuses uid 0, a table name that could smuggle syntax, and clashing ports") {
  airlock::launcher::sidecar_rules s;
  CHECK(render(s).error().find("uid of its own") != std::string::npos);  // uid 0 would exempt all of root
  s.airlock_uid = 1337;
  REQUIRE(render(s).has_value());
  s.table = "x; flush ruleset";
  CHECK_FALSE(render(s).has_value());
  s.table = "airlock_sidecar";
  s.dns_port = s.proxy_port;
  CHECK_FALSE(render(s).has_value());
  s.dns_port = 15053;
  s.https_port = 15053;
  CHECK_FALSE(render(s).has_value());
}
