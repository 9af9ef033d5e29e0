#include "policy/families.hpp"
#include "policy/own_addresses.hpp"
#include "policy/snapshot.hpp"
#include "unit/policy/support.hpp"

#include <doctest/doctest.h>

using namespace airlock::policy;

namespace {

using test::compile;
using test::name;

boost::asio::ip::address ip(const char* a) { return boost::asio::ip::make_address(a); }

constexpr const char* policy_yaml = R"(version: 1
policies:
  p:
    allow:
      - host: github.com
        ports: [443, 22]
      - host: "*.github.com"
        ports: [443]
      - host: registry.npmjs.org
      - cidr: 198.51.100.10/32
        ports: [8080]
      - cidr: 10.1.0.0/16
        ports: [5432]
    deny:
      - host: gist.github.com
      - host: "*.internal.github.com"
      - cidr: 198.51.100.11/32
  watch:
    mode: audit
    allow:
      - host: example.com
sessions:
  - source: 198.51.100.0/24
    policy: watch
  - source: 198.51.100.0/25
    policy: p
)";

}  // namespace

TEST_CASE("exact names, ports default to 80 and 443") {
  auto s = compile(policy_yaml);
  const auto& p = *s->find_policy("p");
  CHECK(p.decide(name("registry.npmjs.org"), 443).reason == reason::host_allowed);
  CHECK(p.decide(name("registry.npmjs.org"), 80).reason == reason::host_allowed);
  CHECK(p.decide(name("registry.npmjs.org"), 8443).reason == reason::port_not_allowed);
  CHECK(p.decide(name("REGISTRY.npmjs.org."), 443).verdict == verdict::allow);
  CHECK(p.decide(name("github.com"), 22).rule == "t.yaml:5");
  CHECK(p.decide(name("github.com"), 80).reason == reason::port_not_allowed);
}

TEST_CASE("*.suffix is any depth of subdomain, never the apex or a look-alike") {
  auto s = compile(policy_yaml);
  const auto& p = *s->find_policy("p");
  CHECK(p.decide(name("api.github.com"), 443).verdict == verdict::allow);
  CHECK(p.decide(name("a.b.c.github.com"), 443).verdict == verdict::allow);
  CHECK(p.decide(name("api.github.com"), 443).rule == "t.yaml:7");
  CHECK(p.decide(name("api.github.com"), 22).reason == reason::port_not_allowed);
  CHECK(p.decide(name("evilgithub.com"), 443).reason == reason::host_not_allowed);
  CHECK(p.decide(name("github.com.evil.test"), 443).reason == reason::host_not_allowed);
  CHECK(p.decide(name("xgithub.com"), 443).reason == reason::host_not_allowed);
  CHECK(p.decide(name("com"), 443).reason == reason::host_not_allowed);
}

TEST_CASE("*.suffix alone does not allow its apex") {
  // The case above cannot show it: its policy allows github.com by a rule of its own.
  auto s = compile("version: 1\npolicies:\n  p:\n    allow:\n      - host: \"*.github.com\"\n");
  const auto& p = *s->find_policy("p");
  CHECK(p.decide(name("api.github.com"), 443).verdict == verdict::allow);
  CHECK(p.decide(name("github.com"), 443).reason == reason::host_not_allowed);
  CHECK(p.decide(name("github.com"), any_port).reason == reason::host_not_allowed);
}

TEST_CASE("deny beats allow, on every port unless it lists ports") {
  auto s = compile(policy_yaml);
  const auto& p = *s->find_policy("p");
  CHECK(p.decide(name("gist.github.com"), 443).reason == reason::host_denied);
  CHECK(p.decide(name("gist.github.com"), 443).rule == "t.yaml:15");
  CHECK(p.decide(name("x.internal.github.com"), 443).reason == reason::host_denied);
  CHECK(p.decide(name("internal.github.com"), 443).verdict == verdict::allow);
  CHECK(p.decide(name("gist.github.com"), any_port).reason == reason::host_denied);
}

TEST_CASE("DNS asks about any port") {
  auto s = compile(policy_yaml);
  const auto& p = *s->find_policy("p");
  CHECK(p.decide(name("github.com"), any_port).verdict == verdict::allow);
  CHECK(p.decide(name("evil.test"), any_port).reason == reason::host_not_allowed);
}

TEST_CASE("addresses without a name: cidr rules, special ranges, no_name") {
  auto s = compile(policy_yaml);
  const auto& p = *s->find_policy("p");
  CHECK(p.decide(ip("198.51.100.10"), 8080).reason == reason::cidr_allowed);
  CHECK(p.decide(ip("198.51.100.10"), 443).reason == reason::no_name);
  CHECK(p.decide(ip("198.51.100.11"), 443).reason == reason::host_denied);
  CHECK(p.decide(ip("203.0.113.9"), 443).reason == reason::no_name);
  CHECK(p.decide(ip("169.254.169.254"), 80).reason == reason::private_address);
  CHECK(p.decide(ip("::ffff:127.0.0.1"), 80).reason == reason::private_address);
  CHECK(p.decide(ip("10.1.2.3"), 5432).reason == reason::cidr_allowed);
  CHECK(p.decide(ip("10.1.2.3"), 5433).reason == reason::private_address);
  CHECK(p.cidr_allowance(ip("10.1.2.3"), 5432) != nullptr);
  CHECK(p.cidr_allowance(ip("10.2.0.1"), 5432) == nullptr);
}

TEST_CASE("audit mode computes the deny and lets it pass") {
  auto s = compile(policy_yaml);
  const auto& w = *s->find_policy("watch");
  auto d = w.decide(name("attacker.example"), 443);
  CHECK(d.verdict == verdict::audit_deny);
  CHECK(d.reason == reason::host_not_allowed);
  CHECK(d.allowed());
  CHECK(w.decide(name("example.com"), 443).verdict == verdict::allow);
  // Special addresses stay closed in audit mode.
  CHECK(w.decide(ip("169.254.169.254"), 80).verdict == verdict::deny);
  CHECK(w.decide(ip("203.0.113.9"), 443).verdict == verdict::audit_deny);
}

TEST_CASE("sessions: longest prefix wins; unknown sources have no session without a default") {
  auto s = compile(policy_yaml);
  CHECK(s->session_for(ip("198.51.100.5"))->policy->name() == "p");
  CHECK(s->session_for(ip("198.51.100.200"))->policy->name() == "watch");
  CHECK(s->session_for(ip("198.51.100.200"))->id == "198.51.100.0/24");
  CHECK(s->session_for(ip("::ffff:198.51.100.5"))->policy->name() == "p");
  CHECK_FALSE(s->session_for(ip("203.0.113.1")));
}

TEST_CASE("the version is a content hash: same content, same version; any change, a new one") {
  auto a = compile(policy_yaml);
  auto b = compile(policy_yaml);
  CHECK(a->version() == b->version());
  CHECK(a->version().size() == 16);
  std::string changed = policy_yaml;
  changed.replace(changed.find("ports: [443, 22]"), 16, "ports: [443, 23]");
  CHECK(compile(changed.c_str())->version() != a->version());
}

TEST_CASE("regex rules: anchored, case-insensitive, with their own line as the rule") {
  auto s = compile(R"(version: 1
policies:
  p:
    allow:
      - regex: '[a-z0-9-]+\.pkg\.example\.test'
      - regex: '^mirror[0-9]+\.example\.test$'
        ports: [8443]
    deny:
      - regex: 'evil-.*\.pkg\.example\.test'
)");
  const auto& p = *s->find_policy("p");
  CHECK(p.decide(name("abc-1.pkg.example.test"), 443).rule == "t.yaml:5");
  CHECK(p.decide(name("ABC.PKG.example.test"), 443).verdict == verdict::allow);
  // anchored at both ends even when the pattern is not
  CHECK(p.decide(name("abc.pkg.example.test.attacker.example"), 443).reason == reason::host_not_allowed);
  CHECK(p.decide(name("x.abc.pkg.example.test"), 443).reason == reason::host_not_allowed);
  CHECK(p.decide(name("mirror7.example.test"), 8443).rule == "t.yaml:6");
  CHECK(p.decide(name("mirror7.example.test"), 443).reason == reason::port_not_allowed);
  CHECK(p.decide(name("evil-x.pkg.example.test"), 443).reason == reason::host_denied);
}

TEST_CASE("operator floors: always_deny beats every policy (audit too), always_allow beats a policy's deny") {
  auto s = compile(R"(version: 1
always_deny:
  - host: metadata.google.internal
  - cidr: 169.254.169.254/32
always_allow:
  - host: mirror.corp.example
policies:
  p:
    allow:
      - host: metadata.google.internal
      - cidr: 169.254.0.0/16
    deny:
      - host: mirror.corp.example
  watch:
    mode: audit
    allow: []
)");
  const auto& p = *s->find_policy("p");
  const auto& w = *s->find_policy("watch");
  CHECK(p.decide(name("metadata.google.internal"), 80).rule == "t.yaml:3");
  CHECK(w.decide(name("metadata.google.internal"), 80).verdict == verdict::deny);
  CHECK(p.decide(ip("169.254.169.254"), 80).reason == reason::host_denied);
  CHECK(p.cidr_allowance(ip("169.254.169.254"), 80) == nullptr);
  CHECK(p.cidr_allowance(ip("169.254.1.1"), 80) != nullptr);
  CHECK(p.decide(name("mirror.corp.example"), 443).verdict == verdict::allow);
  CHECK(w.decide(name("mirror.corp.example"), 443).rule == "t.yaml:6");
  CHECK(w.decide(name("other.example"), 443).verdict == verdict::audit_deny);
}

TEST_CASE("service families: include adds their hosts, named by the family's own lines") {
  auto s = compile(R"(version: 1
policies:
  p:
    include: [github, npm]
)");
  const auto& p = *s->find_policy("p");
  const auto d = p.decide(name("release-assets.githubusercontent.com"), 443);
  CHECK(d.verdict == verdict::allow);
  CHECK(std::string(d.rule).starts_with("<family github>:"));
  CHECK(p.decide(name("github.com"), 22).verdict == verdict::allow);
  CHECK(p.decide(name("registry.npmjs.org"), 443).verdict == verdict::allow);
  CHECK(p.decide(name("gist.githubusercontent.com"), 443).verdict == verdict::deny);
  CHECK(p.decide(name("pypi.org"), 443).verdict == verdict::deny);
}

TEST_CASE("every shipped family loads, and every allow family has a why for each host") {
  for (auto n : family_names()) {
    CAPTURE(n);
    auto f = load_family(n);
    REQUIRE_MESSAGE(f.has_value(), (f.has_value() ? std::string() : f.error().front().to_string()));
    CHECK(f->version >= 1);
    CHECK_FALSE(f->description.empty());
    CHECK(f->allow.size() + f->deny.size() > 0);
  }
  CHECK(family_names().size() >= 8);
}

TEST_CASE("public DoH/DoT resolvers are denied in every policy, even when allowed") {
  auto s = compile(R"(version: 1
policies:
  p:
    allow:
      - host: dns.google
      - host: "*.example.com"
)");
  const auto& p = *s->find_policy("p");
  auto d = p.decide(name("dns.google"), 443);
  CHECK(d.reason == reason::host_denied);
  CHECK(std::string(d.rule).starts_with("<family public-resolvers>:"));
  CHECK(p.decide(name("cloudflare-dns.com"), any_port).reason == reason::host_denied);
  CHECK(p.decide(name("www.example.com"), 443).verdict == verdict::allow);
}

TEST_CASE("redirects and inspection are read") {
  auto cfg = load_config_text(R"(version: 1
inspection:
  ca_dir: /var/lib/airlock/ca
  upstream_ca: [/etc/airlock/extra.pem]
policies:
  p:
    allow:
      - host: registry.npmjs.org
        inspect: true
    redirects:
      - from: registry.npmjs.org
        to: ["*.cloudfront.net", objects.example.net]
)",
                              "t.yaml");
  REQUIRE(cfg.has_value());
  CHECK(cfg->inspection.ca_dir == "/var/lib/airlock/ca");
  CHECK(cfg->policies[0].allow[0].inspect);
  REQUIRE(cfg->policies[0].redirects.size() == 1);
  CHECK(cfg->policies[0].redirects[0].from == "registry.npmjs.org");
  CHECK(cfg->policies[0].redirects[0].to == std::vector<std::string>{"*.cloudfront.net", "objects.example.net"});
  auto s = snapshot::compile(*cfg);
  REQUIRE(s.has_value());
  CHECK((*s)->find_policy("p")->decide(name("registry.npmjs.org"), 443).inspect);
}

TEST_CASE("sessions registered at run time take precedence; a missing policy denies, never falls back") {
  auto s = compile(policy_yaml);
  session_table registered({
      {"sbx-1", {*cidr::parse("198.51.100.200/32")}, "p", {{"task", "t1"}}},
      {"sbx-2", {*cidr::parse("198.51.100.201/32")}, "gone", {}},
  });
  auto one = s->session_for(ip("198.51.100.200"), &registered);
  REQUIRE(one);
  CHECK(one->id == "sbx-1");
  CHECK(one->policy->name() == "p");  // the config alone says "watch" for this address
  CHECK(s->session_for(ip("198.51.100.200"))->policy->name() == "watch");
  CHECK_FALSE(s->session_for(ip("198.51.100.201"), &registered));
  CHECK(s->session_for(ip("198.51.100.5"), &registered)->policy->name() == "p");
}

TEST_CASE("protocol per port: 443 carries TLS naming the host, 80 HTTP naming it, other ports anything") {
  const auto snap = compile(R"(version: 1
policies:
  p:
    allow:
      - host: web.test
      - host: git.test
        ports: [22, 443]
      - host: wide.test
        ports: [80, {port: 443, protocol: any}, {port: 8080, protocol: http}]
      - cidr: 198.51.100.10/32
        ports: [443, 5432]
    deny:
      - host: blocked.test
)");
  const auto& p = *snap->find_policy("p");
  CHECK(p.decide(name("web.test"), 443, wire::tls).verdict == verdict::allow);
  CHECK(p.decide(name("web.test"), 443, wire::tls).protocol == port_protocol::tls);
  CHECK(p.decide(name("web.test"), 80, wire::http).protocol == port_protocol::http);
  for (auto w : {wire::opaque, wire::http}) {
    CAPTURE(to_string(w));
    const auto d = p.decide(name("web.test"), 443, w);
    CHECK(d.verdict == verdict::deny);
    CHECK(d.reason == reason::protocol_not_allowed);
    CHECK(d.rule == "t.yaml:5");
  }
  CHECK(p.decide(name("web.test"), 80, wire::tls).reason == reason::protocol_not_allowed);
  CHECK(p.decide(name("web.test"), 80, wire::opaque).reason == reason::protocol_not_allowed);
  // ssh on 22 keeps working: other listed ports carry anything.
  CHECK(p.decide(name("git.test"), 22, wire::opaque).verdict == verdict::allow);
  CHECK(p.decide(name("git.test"), 22, wire::opaque).protocol == port_protocol::any);
  CHECK(p.decide(name("git.test"), 443, wire::opaque).reason == reason::protocol_not_allowed);
  // Widened on purpose, and narrowed on purpose.
  CHECK(p.decide(name("wide.test"), 443, wire::opaque).verdict == verdict::allow);
  CHECK(p.decide(name("wide.test"), 443, wire::tls).protocol == port_protocol::any);
  CHECK(p.decide(name("wide.test"), 8080, wire::http).verdict == verdict::allow);
  CHECK(p.decide(name("wide.test"), 8080, wire::opaque).reason == reason::protocol_not_allowed);
  // A port no rule lists stays port_not_allowed; a deny covers every protocol.
  CHECK(p.decide(name("web.test"), 22, wire::opaque).reason == reason::port_not_allowed);
  CHECK(p.decide(name("blocked.test"), 443, wire::tls).reason == reason::host_denied);
  // DNS and `airlock test` without --speaks ask about the name and port alone.
  CHECK(p.decide(name("web.test"), 443).verdict == verdict::allow);
  CHECK(p.decide(name("web.test"), any_port).verdict == verdict::allow);
  // A cidr rule judges the kind of bytes: TLS (named or not) on its 443, anything on 5432.
  CHECK(p.decide(ip("198.51.100.10"), 443, wire::tls).verdict == verdict::allow);
  CHECK(p.decide(ip("198.51.100.10"), 443, wire::opaque).reason == reason::protocol_not_allowed);
  CHECK(p.decide(ip("198.51.100.10"), 5432, wire::opaque).verdict == verdict::allow);
  CHECK(p.decide(ip("198.51.100.10"), 8080, wire::opaque).reason == reason::no_name);
}

TEST_CASE("protocol per port: audit mode lets a protocol denial through as audit-deny; floors judge it too") {
  const auto snap = compile(R"(version: 1
always_allow:
  - host: floor.test
policies:
  watch:
    mode: audit
    allow:
      - host: web.test
)");
  const auto& p = *snap->find_policy("watch");
  const auto d = p.decide(name("web.test"), 443, wire::opaque);
  CHECK(d.verdict == verdict::audit_deny);
  CHECK(d.reason == reason::protocol_not_allowed);
  CHECK(p.decide(name("floor.test"), 443, wire::tls).verdict == verdict::allow);
  const auto f = p.decide(name("floor.test"), 443, wire::opaque);
  CHECK(f.reason == reason::protocol_not_allowed);
  CHECK(f.rule == "t.yaml:3");
}

TEST_CASE("the default protocols") {
  CHECK(default_protocol(443) == port_protocol::tls);
  CHECK(default_protocol(853) == port_protocol::tls);
  CHECK(default_protocol(8443) == port_protocol::tls);
  CHECK(default_protocol(80) == port_protocol::http);
  CHECK(default_protocol(22) == port_protocol::any);
  CHECK(default_protocol(8080) == port_protocol::any);
  CHECK(parse_port_protocol("any") == port_protocol::any);
  CHECK_FALSE(parse_port_protocol("ssh").has_value());
}

TEST_CASE("airlock's own addresses: reached only through a cidr rule that says own: true") {
  const auto snap = compile(R"(version: 1
policies:
  p:
    allow:
      - cidr: 203.0.113.0/24
        ports: [8080]
      - cidr: 203.0.113.1/32
        ports: [9191]
        own: true
      - cidr: 10.0.0.0/8
        ports: [5432]
)");
  const auto& p = *snap->find_policy("p");
  const own_addresses own(
      {*cidr::parse("203.0.113.1/32"), *cidr::parse("198.51.100.0/30"), *cidr::parse("2001:db8::1")});
  CHECK(own.contains(ip("203.0.113.1")));
  CHECK(own.contains(ip("::ffff:203.0.113.1")));
  CHECK(own.contains(ip("198.51.100.3")));
  CHECK_FALSE(own.contains(ip("198.51.100.4")));
  CHECK(own.contains(ip("2001:db8::1")));
  // Global and not ours: reachable (its name or rule was judged before).
  CHECK(reachable(p, &own, ip("203.0.113.10"), 8080));
  // Ours: a cidr rule covering it is not enough; one with own: true is, on its ports.
  CHECK_FALSE(reachable(p, &own, ip("203.0.113.1"), 8080));
  CHECK(reachable(p, &own, ip("203.0.113.1"), 9191));
  CHECK(reachable(p, &own, ip("203.0.113.1"), any_port));  // DNS: the own rule allows some port
  CHECK_FALSE(reachable(p, &own, ip("198.51.100.2"), 8080));
  // Other special addresses: any covering cidr rule allows them, with or without the own set.
  CHECK(reachable(p, &own, ip("10.1.2.3"), 5432));
  CHECK_FALSE(reachable(p, &own, ip("10.1.2.3"), 80));
  CHECK_FALSE(reachable(p, nullptr, ip("198.18.0.6"), 8080));
  CHECK(reachable(p, nullptr, ip("203.0.113.1"), 8080));  // no own set known: only its class counts
}

TEST_CASE("airlock's own addresses: a thousand sandboxes' /30s, each found and nothing beside them") {
  std::vector<cidr> many;
  for (unsigned i = 0; i < 1000; ++i)
    many.push_back({boost::asio::ip::address_v4(0xc6120000u + 4 * i), 30});  // 198.18.0.0 + 4i
  many.push_back(*cidr::parse("2001:db8:5::/64"));
  const own_addresses own(std::move(many));
  CHECK(own.contains(ip("198.18.0.0")));
  CHECK(own.contains(ip("198.18.0.3")));
  CHECK(own.contains(ip("198.18.15.158")));  // the last block: 198.18.15.156/30
  CHECK_FALSE(own.contains(ip("198.18.15.160")));
  CHECK_FALSE(own.contains(ip("198.17.255.255")));
  CHECK(own.contains(ip("::ffff:198.18.1.1")));
  CHECK(own.contains(ip("2001:db8:5::ffff")));
  CHECK_FALSE(own.contains(ip("2001:db8:6::1")));
  CHECK_FALSE(own.contains(ip("::c612:1")));  // the same bits, but an IPv6 address
}
