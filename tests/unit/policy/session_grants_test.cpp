#include "policy/session_grants.hpp"

#include "policy/host_port.hpp"
#include "unit/policy/support.hpp"

#include <doctest/doctest.h>

using namespace airlock::policy;
using namespace std::chrono_literals;

namespace {

using test::name;
using clock_t_ = session_grants::clock;
const auto t0 = clock_t_::time_point{} + 1000s;

// A request for `allow` ("host", "*.suffix") on `ports` (none: 80 and 443).
session_grants::request asking(const char* session, const char* allow, std::vector<std::uint16_t> ports = {80, 443}) {
  session_grants::request r;
  r.session = session;
  r.allow = allow;
  auto rule = parse_host_pattern(allow);
  REQUIRE(rule.has_value());
  rule->ports = std::move(ports);
  r.targets.push_back(std::move(*rule));
  return r;
}

}  // namespace

TEST_CASE("a grant allows its host on its ports for its session only, and speaks what the port carries") {
  session_grants g;
  auto r = asking("s1", "files.example.org");
  r.lasts = 60s;
  auto added = g.add(std::move(r), t0);
  REQUIRE(added.has_value());
  CHECK(added->id == "g1");
  CHECK(added->rule() == "grant:g1");

  auto u = g.peek("s1", name("FILES.example.org."), 443, wire::tls, t0);
  REQUIRE(u);
  CHECK(u->rule == "grant:g1");
  CHECK(u->protocol == port_protocol::tls);
  CHECK(g.peek("s1", name("files.example.org"), 0, wire::unjudged, t0));  // DNS: any port
  CHECK_FALSE(g.peek("s2", name("files.example.org"), 443, wire::tls, t0));
  CHECK_FALSE(g.peek("s1", name("www.files.example.org"), 443, wire::tls, t0));
  CHECK_FALSE(g.peek("s1", name("example.org"), 443, wire::tls, t0));
  CHECK_FALSE(g.peek("s1", name("files.example.org"), 22, wire::opaque, t0));
  // 443 carries TLS: opaque bytes or plain HTTP there are not what the grant lets through.
  CHECK_FALSE(g.peek("s1", name("files.example.org"), 443, wire::opaque, t0));
  CHECK_FALSE(g.peek("s1", name("files.example.org"), 443, wire::http, t0));
  CHECK(g.peek("s1", name("files.example.org"), 80, wire::http, t0));
}

TEST_CASE("a wildcard grant covers subdomains at any depth, never the apex or a look-alike") {
  session_grants g;
  auto r = asking("s", "*.example.org");
  r.lasts = 60s;
  REQUIRE(g.add(std::move(r), t0).has_value());
  CHECK(g.peek("s", name("a.example.org"), 443, wire::tls, t0));
  CHECK(g.peek("s", name("a.b.example.org"), 443, wire::tls, t0));
  CHECK_FALSE(g.peek("s", name("example.org"), 443, wire::tls, t0));
  CHECK_FALSE(g.peek("s", name("badexample.org"), 443, wire::tls, t0));
}

TEST_CASE("a port grant opens that port with its default protocol, any bytes off 80 and 443") {
  session_grants g;
  auto r = asking("s", "git.example.org", {22});
  r.lasts = 60s;
  REQUIRE(g.add(std::move(r), t0).has_value());
  auto u = g.peek("s", name("git.example.org"), 22, wire::opaque, t0);
  REQUIRE(u);
  CHECK(u->protocol == port_protocol::any);
  CHECK_FALSE(g.peek("s", name("git.example.org"), 443, wire::tls, t0));
}

TEST_CASE("peek counts nothing; take counts a connection and a grant of N connections ends at N, cutting nothing") {
  session_grants g;
  auto r = asking("s", "a.example");
  r.connections = 2;
  REQUIRE(g.add(std::move(r), t0).has_value());
  for (int i = 0; i < 5; ++i) CHECK(g.peek("s", name("a.example"), 443, wire::tls, t0));
  auto first = g.take("s", name("a.example"), 443, wire::tls, t0);
  REQUIRE(first);
  REQUIRE(first->cut);
  CHECK(g.list("s", t0).front().connections_left == 1u);
  CHECK(g.list("s", t0).front().used == 1u);
  auto second = g.take("s", name("a.example"), 443, wire::tls, t0);
  REQUIRE(second);
  CHECK_FALSE(g.take("s", name("a.example"), 443, wire::tls, t0));
  CHECK(g.size() == 0);
  auto ended = g.drain_ended();
  REQUIRE(ended.size() == 1);
  CHECK(ended[0].why == session_grants::end_reason::used_up);
  CHECK(ended[0].grant.used == 2u);
  CHECK(ended[0].cut == 0);
  CHECK_FALSE(first->cut->pulled());  // used up: its connections were what it was for
  CHECK_FALSE(second->cut->pulled());
}

TEST_CASE("a grant for a time expires on its own, and its connections' switches are pulled") {
  session_grants g;
  auto r = asking("s", "a.example");
  r.lasts = 10s;
  REQUIRE(g.add(std::move(r), t0).has_value());
  auto u = g.take("s", name("a.example"), 443, wire::tls, t0 + 9s);
  REQUIRE(u);
  CHECK_FALSE(g.peek("s", name("a.example"), 443, wire::tls, t0 + 10s));  // past its end, even unswept
  g.sweep(t0 + 10s);
  CHECK(g.size() == 0);
  auto ended = g.drain_ended();
  REQUIRE(ended.size() == 1);
  CHECK(ended[0].why == session_grants::end_reason::expired);
  CHECK(ended[0].cut == 1);
  CHECK(u->cut->pulled());
  CHECK(g.drain_ended().empty());  // said once
}

TEST_CASE("cut: false leaves a grant's connections alone when it ends") {
  session_grants g;
  auto r = asking("s", "a.example");
  r.lasts = 10s;
  r.cut = false;
  REQUIRE(g.add(std::move(r), t0).has_value());
  auto u = g.take("s", name("a.example"), 443, wire::tls, t0);
  REQUIRE(u);
  CHECK_FALSE(u->cut);
  REQUIRE(g.revoke("s", "g1", t0));
  CHECK(g.drain_ended().at(0).cut == 0);
}

TEST_CASE("revoke ends one grant of its session, and names no other session's") {
  session_grants g;
  auto a = asking("s", "a.example");
  a.lasts = 60s;
  auto b = asking("s", "b.example");
  b.lasts = 60s;
  REQUIRE(g.add(std::move(a), t0).has_value());
  REQUIRE(g.add(std::move(b), t0).has_value());
  auto conn = g.take("s", name("a.example"), 443, wire::tls, t0);
  REQUIRE(conn);
  CHECK_FALSE(g.revoke("other", "g1", t0));
  CHECK_FALSE(g.revoke("s", "g9", t0));
  CHECK(g.revoke("s", "g1", t0));
  CHECK_FALSE(g.revoke("s", "g1", t0));
  CHECK(conn->cut->pulled());
  CHECK_FALSE(g.peek("s", name("a.example"), 443, wire::tls, t0));
  CHECK(g.peek("s", name("b.example"), 443, wire::tls, t0));
  auto ended = g.drain_ended();
  REQUIRE(ended.size() == 1);
  CHECK(ended[0].why == session_grants::end_reason::revoked);
  CHECK(ended[0].grant.id == "g1");
}

TEST_CASE("a tool call's grant ends when the session's tool call changes; others stay") {
  session_grants g;
  auto call = asking("s", "a.example");
  call.tool_call = "call-1";
  auto timed = asking("s", "b.example");
  timed.lasts = 60s;
  REQUIRE(g.add(std::move(call), t0).has_value());
  REQUIRE(g.add(std::move(timed), t0).has_value());
  g.tool_call_changed("s", "call-1", t0);  // the same call again: nothing ends
  CHECK(g.size() == 2);
  g.tool_call_changed("s", "", t0);
  CHECK_FALSE(g.peek("s", name("a.example"), 443, wire::tls, t0));
  CHECK(g.peek("s", name("b.example"), 443, wire::tls, t0));
  auto ended = g.drain_ended();
  REQUIRE(ended.size() == 1);
  CHECK(ended[0].why == session_grants::end_reason::tool_call_ended);
}

TEST_CASE("a grant without an end of its own lasts until its session is forgotten, and never past it") {
  session_grants g;
  REQUIRE(g.add(asking("s", "a.example"), t0).has_value());
  CHECK(g.peek("s", name("a.example"), 443, wire::tls, t0 + 24h));
  auto conn = g.take("s", name("a.example"), 443, wire::tls, t0 + 24h);
  REQUIRE(conn);
  g.forget("s", t0 + 25h);
  CHECK(g.size() == 0);
  CHECK(conn->cut->pulled());
  CHECK(g.drain_ended().at(0).why == session_grants::end_reason::session_closed);
  // A session of the same name later starts with nothing.
  CHECK_FALSE(g.peek("s", name("a.example"), 443, wire::tls, t0 + 26h));
}

TEST_CASE("bounded per session and in all: a grant beyond is refused, never made room for") {
  session_grants g({2, 3});
  for (const char* h : {"a.example", "b.example"}) REQUIRE(g.add(asking("s1", h), t0).has_value());
  auto over = g.add(asking("s1", "c.example"), t0);
  REQUIRE_FALSE(over.has_value());
  CHECK(over.error() == session_grants::refusal::session_full);
  REQUIRE(g.add(asking("s2", "a.example"), t0).has_value());
  auto full = g.add(asking("s3", "a.example"), t0);
  REQUIRE_FALSE(full.has_value());
  CHECK(full.error() == session_grants::refusal::total_full);
  CHECK(g.peek("s1", name("a.example"), 443, wire::tls, t0));  // the oldest still stands
  REQUIRE(g.revoke("s1", "g1", t0));
  CHECK(g.add(asking("s3", "a.example"), t0).has_value());  // room again
  CHECK(g.size() == 3);
}

TEST_CASE("1,000 connections under one grant keep its list of switches bounded by the live ones") {
  session_grants g;
  REQUIRE(g.add(asking("s", "a.example"), t0).has_value());
  std::shared_ptr<airlock::base::cut_switch> last;
  for (int i = 0; i < 1000; ++i) last = g.take("s", name("a.example"), 443, wire::tls, t0)->cut;
  CHECK(g.list("s", t0).front().used == 1000u);
  REQUIRE(g.revoke("s", "g1", t0));
  CHECK(g.drain_ended().at(0).cut == 1);  // only the one still held
  CHECK(last->pulled());
}
