#include "launcher/nft_rules.hpp"

#include <doctest/doctest.h>

using airlock::launcher::gateway_rules;
using airlock::launcher::render;

TEST_CASE("the gateway table redirects DNS and TCP and drops everything else") {
  gateway_rules g;
  g.iface = "al-g0";
  auto r = render(g);
  REQUIRE(r.has_value());
  const std::string& t = *r;
  CHECK(t.starts_with("table inet airlock_al_g0 {\n"));
  // DNS before the catch-all TCP redirect, so TCP 53 reaches the DNS server.
  CHECK(t.find("iifname \"al-g0\" udp dport 53 redirect to :15053") < t.find("meta l4proto tcp redirect to :15001"));
  CHECK(t.find("iifname \"al-g0\" tcp dport 53 redirect to :15053") < t.find("meta l4proto tcp redirect to :15001"));
  CHECK(t.find("ct status dnat tcp dport 15001 accept") != std::string::npos);
  CHECK(t.find("iifname \"al-g0\" counter drop") != std::string::npos);
  // Only neighbour discovery passes unredirected, so IPv6 can reach the gateway at all.
  CHECK(t.find("icmpv6 type { nd-neighbor-solicit, nd-neighbor-advert } ip6 hoplimit 255 accept") <
        t.find("iifname \"al-g0\" counter drop"));
  CHECK(t.find("oifname \"al-g0\" counter drop") != std::string::npos);
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
  CHECK(t.find("iifname \"al-g0\" udp dport 53 redirect to :15053") != std::string::npos);
  CHECK(t.find("redirect to :15002") == std::string::npos);  // TCP is never NATed
  CHECK(t.find("meta mark 0x1a1 meta l4proto tcp accept") < t.find("iifname \"al-g0\" counter drop"));
  CHECK(t.find("oifname \"al-g0\" counter drop") != std::string::npos);
}

TEST_CASE("an HTTPS port keeps :443 on a listener of its own, and is admitted like the proxy port") {
  gateway_rules g;
  g.iface = "al-g0";
  g.https_port = 15443;
  auto r = render(g);
  REQUIRE(r.has_value());
  const std::string& t = *r;
  // Before the catch-all, which takes every other port.
  CHECK(t.find("iifname \"al-g0\" tcp dport 443 redirect to :15443") < t.find("meta l4proto tcp redirect to :15001"));
  CHECK(t.find("ct status dnat tcp dport { 15001, 15443 } accept") != std::string::npos);

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
