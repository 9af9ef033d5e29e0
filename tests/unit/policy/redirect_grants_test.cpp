#include "policy/redirect_grants.hpp"

#include "unit/policy/support.hpp"

#include <doctest/doctest.h>

using namespace airlock::policy;
using namespace std::chrono_literals;

namespace {

using test::name;
const auto t0 = redirect_grants::clock::time_point{} + 1000s;

}  // namespace

TEST_CASE("a grant is one use: peek does not consume it, take does") {
  redirect_grants g;
  g.grant("s1", name("cdn.example.net"), name("registry.example.com"), "a.yaml:9", t0);
  auto p = g.peek("s1", name("CDN.example.net."), t0 + 1s);
  REQUIRE(p);
  CHECK(p->from_host == "registry.example.com");
  CHECK(p->rule == "a.yaml:9");
  CHECK(g.peek("s1", name("cdn.example.net"), t0 + 2s));
  CHECK_FALSE(g.peek("s2", name("cdn.example.net"), t0 + 2s));  // per session
  CHECK_FALSE(g.take("s2", name("cdn.example.net"), t0 + 2s));
  auto t = g.take("s1", name("cdn.example.net"), t0 + 3s);
  REQUIRE(t);
  CHECK(t->rule == "a.yaml:9");
  CHECK_FALSE(g.take("s1", name("cdn.example.net"), t0 + 3s));
  CHECK_FALSE(g.peek("s1", name("cdn.example.net"), t0 + 3s));
  CHECK(g.size() == 0);
}

TEST_CASE("a grant lasts its ttl (30 s by default); granting again renews it and adds a use") {
  redirect_grants g;
  g.grant("s", name("a.example"), name("o.example"), "r:1", t0);
  CHECK(g.peek("s", name("a.example"), t0 + 29s));
  CHECK_FALSE(g.peek("s", name("a.example"), t0 + 30s));
  CHECK(g.size() == 0);  // swept when found expired
  g.grant("s", name("a.example"), name("o.example"), "r:1", t0, 5s);
  g.grant("s", name("a.example"), name("p.example"), "r:2", t0 + 4s, 5s);
  CHECK(g.size() == 1);
  auto p = g.peek("s", name("a.example"), t0 + 8s);
  REQUIRE(p);
  CHECK(p->from_host == "p.example");
  CHECK(p->uses == 2);  // two redirects, two connections (a client fetching in parallel)
  CHECK(g.take("s", name("a.example"), t0 + 8s));
  CHECK(g.take("s", name("a.example"), t0 + 8s));
  CHECK_FALSE(g.take("s", name("a.example"), t0 + 8s));
}

TEST_CASE("uses are capped: a flood of redirects opens no more than max_uses connections") {
  redirect_grants g;
  for (int i = 0; i < 100; ++i) g.grant("s", name("a.example"), name("o.example"), "r:1", t0);
  std::uint32_t taken = 0;
  while (g.take("s", name("a.example"), t0 + 1s) && taken < 1000) ++taken;
  CHECK(taken == redirect_grants::max_uses);
}

TEST_CASE("refusals are remembered for 30 s, apart from grants") {
  redirect_grants g;
  g.refused("s", name("evil.example"), name("registry.example.com"), t0);
  CHECK(g.refused_from("s", name("evil.example"), t0 + 29s) == "registry.example.com");
  CHECK_FALSE(g.refused_from("t", name("evil.example"), t0 + 1s));
  CHECK_FALSE(g.peek("s", name("evil.example"), t0 + 1s));  // a refusal grants nothing
  CHECK_FALSE(g.take("s", name("evil.example"), t0 + 1s));
  CHECK(g.refused_from("s", name("evil.example"), t0 + 2s));  // reading does not consume
  CHECK_FALSE(g.refused_from("s", name("evil.example"), t0 + 30s));
}

TEST_CASE("bounded per session and in total; the oldest goes first") {
  redirect_grants g({.per_session = 3, .total = 5});
  for (const char* h : {"a.example", "b.example", "c.example", "d.example"})
    g.grant("s", name(h), name("o.example"), "r:1", t0);
  CHECK_FALSE(g.peek("s", name("a.example"), t0));  // the session's oldest, dropped for d
  CHECK(g.peek("s", name("b.example"), t0));
  CHECK(g.peek("s", name("d.example"), t0));
  g.grant("t", name("x.example"), name("o.example"), "r:1", t0);
  g.grant("t", name("y.example"), name("o.example"), "r:1", t0);
  CHECK(g.size() == 5);
  g.grant("u", name("z.example"), name("o.example"), "r:1", t0);  // the total is full: the oldest (s's b) goes
  CHECK(g.size() == 5);
  CHECK_FALSE(g.peek("s", name("b.example"), t0));
  CHECK(g.peek("s", name("c.example"), t0));
  CHECK(g.peek("u", name("z.example"), t0));
  // Refusals have caps of their own: they never push grants out.
  for (const char* h : {"1.example", "2.example", "3.example", "4.example", "5.example", "6.example"})
    g.refused("s", name(h), name("o.example"), t0);
  CHECK(g.peek("u", name("z.example"), t0));
  CHECK(g.size() == 8);
}

TEST_CASE("expired entries are swept as calls come; forget drops a session") {
  redirect_grants g;
  for (const char* h : {"a.example", "b.example", "c.example"}) g.grant("s", name(h), name("o.example"), "r:1", t0, 1s);
  g.grant("t", name("a.example"), name("o.example"), "r:1", t0 + 5s);
  CHECK(g.size() == 1);  // the first three expired at t0+1s and went when t's grant came
  g.refused("t", name("b.example"), name("o.example"), t0 + 5s);
  g.grant("s", name("c.example"), name("o.example"), "r:1", t0 + 5s);
  g.forget("t");
  CHECK(g.size() == 1);
  CHECK(g.peek("s", name("c.example"), t0 + 6s));
  CHECK_FALSE(g.peek("t", name("a.example"), t0 + 6s));
}

TEST_CASE("session ids and names cannot run into each other") {
  redirect_grants g;
  g.grant("s", name("ab.example"), name("o.example"), "r:1", t0);
  CHECK_FALSE(g.peek("sa", name("b.example"), t0));
  CHECK_FALSE(g.peek("", name("ab.example"), t0));
}

TEST_CASE("a grant for a port opens only that port; DNS may still resolve the name") {
  redirect_grants g;
  g.grant("s1", name("cdn.example.net"), name("registry.example.com"), "a.yaml:9", t0, redirect_grants::default_ttl,
          443);
  CHECK(g.peek("s1", name("cdn.example.net"), t0 + 1s));
  CHECK_FALSE(g.take("s1", name("cdn.example.net"), t0 + 1s, 8443));  // not that port, and not used up
  auto t = g.take("s1", name("cdn.example.net"), t0 + 1s, 443);
  REQUIRE(t);
  CHECK(t->port == 443);
  CHECK_FALSE(g.take("s1", name("cdn.example.net"), t0 + 1s, 443));
}

TEST_CASE("a grant speaks its redirect's scheme: an http:// grant is no TLS tunnel, nor opaque bytes") {
  redirect_grants g;
  g.grant("s", name("dl.example"), name("o.example"), "r:1", t0, redirect_grants::default_ttl, 80, port_protocol::http);
  CHECK_FALSE(g.take("s", name("dl.example"), t0, 80, wire::tls));     // neither gets it
  CHECK_FALSE(g.take("s", name("dl.example"), t0, 80, wire::opaque));  // nor uses it up
  CHECK(g.peek("s", name("dl.example"), t0));                          // DNS still resolves it
  const auto t = g.take("s", name("dl.example"), t0, 80, wire::http);
  REQUIRE(t);
  CHECK(t->protocol == port_protocol::http);

  g.grant("s", name("cdn.example"), name("o.example"), "r:1", t0, redirect_grants::default_ttl, 443,
          port_protocol::tls);
  CHECK_FALSE(g.take("s", name("cdn.example"), t0, 443, wire::http));
  // A CONNECT asks before its tunnel speaks: it gets the grant, and its protocol to judge by.
  const auto c = g.take("s", name("cdn.example"), t0, 443, wire::unjudged);
  REQUIRE(c);
  CHECK(c->protocol == port_protocol::tls);
}
