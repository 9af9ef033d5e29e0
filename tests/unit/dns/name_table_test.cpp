#include "dns/name_table.hpp"

#include <doctest/doctest.h>

using airlock::dns::name_table;
using namespace std::chrono_literals;

namespace {
boost::asio::ip::address ip(const char* a) { return boost::asio::ip::make_address(a); }
const auto t0 = name_table::clock::time_point{} + 1000h;
}  // namespace

TEST_CASE("an address is known to the session it was given to, for that name, until its TTL") {
  name_table t;
  REQUIRE(t.record("s1", ip("203.0.113.10"), "github.com", 7, 300, t0));
  auto hit = t.lookup("s1", ip("203.0.113.10"), t0 + 299s);
  REQUIRE(hit.size() == 1);
  CHECK(hit[0].name == "github.com");
  CHECK(hit[0].query_id == 7);
  CHECK(t.lookup("s1", ip("203.0.113.10"), t0 + 300s).empty());
  CHECK(t.lookup("s2", ip("203.0.113.10"), t0).empty());  // another sandbox did not ask
  CHECK(t.lookup("s1", ip("203.0.113.11"), t0).empty());
}

TEST_CASE("TTLs are clamped: a TTL-0 answer still covers the connection that follows it") {
  name_table t({.min_ttl = 30s, .max_ttl = 600s});
  t.record("s", ip("203.0.113.10"), "a.example", 1, 0, t0);
  CHECK(t.lookup("s", ip("203.0.113.10"), t0 + 29s).size() == 1);
  CHECK(t.lookup("s", ip("203.0.113.10"), t0 + 30s).empty());
  t.record("s", ip("203.0.113.11"), "b.example", 1, 86400, t0);
  CHECK(t.lookup("s", ip("203.0.113.11"), t0 + 599s).size() == 1);
  CHECK(t.lookup("s", ip("203.0.113.11"), t0 + 600s).empty());
}

TEST_CASE("a shared CDN address carries several names, newest first; renewal costs no entry") {
  name_table t;
  t.record("s", ip("2001:db8::1"), "a.example", 1, 60, t0);
  t.record("s", ip("2001:db8::1"), "b.example", 2, 60, t0);
  t.record("s", ip("2001:db8::1"), "a.example", 3, 120, t0 + 10s);
  CHECK(t.size() == 2);
  auto names = t.lookup("s", ip("2001:db8::1"), t0 + 100s);
  REQUIRE(names.size() == 1);  // b expired at 60 s; a was renewed to 130 s
  CHECK(names[0].name == "a.example");
  CHECK(names[0].query_id == 3);
}

TEST_CASE("caps: per session, per address and in total; expired entries make room") {
  name_table t(
      {.min_ttl = 10s, .max_ttl = 10s, .max_names_per_address = 2, .max_entries_per_session = 3, .max_entries = 5});
  CHECK(t.record("s", ip("203.0.113.1"), "a", 0, 10, t0));
  CHECK(t.record("s", ip("203.0.113.1"), "b", 0, 10, t0));
  CHECK_FALSE(t.record("s", ip("203.0.113.1"), "c", 0, 10, t0));  // per address
  CHECK(t.record("s", ip("203.0.113.2"), "a", 0, 10, t0));
  CHECK_FALSE(t.record("s", ip("203.0.113.3"), "a", 0, 10, t0));  // per session
  CHECK(t.record("other", ip("203.0.113.3"), "a", 0, 10, t0));    // other sessions unaffected
  CHECK(t.record("other", ip("203.0.113.4"), "a", 0, 10, t0));
  CHECK_FALSE(t.record("third", ip("203.0.113.5"), "a", 0, 10, t0));  // in total
  CHECK(t.size() == 5);
  CHECK(t.record("third", ip("203.0.113.5"), "a", 0, 10, t0 + 11s));  // all expired: room again
  CHECK(t.size() == 1);
}
