#include "dns/answer_cache.hpp"

#include <doctest/doctest.h>

using airlock::dns::answer_cache;
namespace wire = airlock::dns::wire;
using namespace std::chrono_literals;

namespace {

const auto t0 = answer_cache::clock::time_point{} + 1000h;

wire::record a_record(std::uint32_t ttl) {
  wire::record r;
  r.owner = *wire::name_from_text("example.com");
  r.rtype = wire::type::a;
  r.rclass = wire::class_in;
  r.ttl = ttl;
  r.rdata = std::string("\xcb\x00\x71\x0a", 4);
  return r;
}

wire::message answer(std::uint8_t rcode, std::vector<wire::record> answers, std::vector<wire::record> authority = {}) {
  wire::message m;
  m.hdr.flags = static_cast<std::uint16_t>(0x8180 | rcode);
  m.answers = std::move(answers);
  m.authority = std::move(authority);
  return m;
}

wire::record soa(std::uint32_t ttl, std::uint32_t minimum) {
  wire::record r;
  r.owner = *wire::name_from_text("example.com");
  r.rtype = wire::type::soa;
  r.rclass = wire::class_in;
  r.ttl = ttl;
  r.rdata = std::string(2, '\0') + std::string(16, '\x01');  // two root names, four counters
  for (int shift = 24; shift >= 0; shift -= 8) r.rdata += static_cast<char>((minimum >> shift) & 0xff);
  return r;
}

}  // namespace

TEST_CASE("a positive answer lives for its smallest TTL, and comes back aged") {
  answer_cache c;
  c.store("example.com", wire::type::a, answer(0, {a_record(300), a_record(60)}), t0);
  auto hit = c.find("example.com", wire::type::a, t0 + 20s);
  REQUIRE(hit);
  CHECK(hit->answers[0].ttl == 280);
  CHECK(hit->answers[1].ttl == 40);
  CHECK_FALSE(c.find("example.com", wire::type::aaaa, t0));
  CHECK_FALSE(c.find("example.com", wire::type::a, t0 + 60s));
  CHECK(c.size() == 0);
}

TEST_CASE("negative answers live for min(SOA TTL, SOA MINIMUM), capped; no SOA, no caching") {
  answer_cache c({.max_entries = 10, .max_ttl = 3600s, .max_negative_ttl = 120s});
  c.store("gone.example", wire::type::a, answer(3, {}, {soa(900, 30)}), t0);
  CHECK(c.find("gone.example", wire::type::a, t0 + 29s));
  CHECK_FALSE(c.find("gone.example", wire::type::a, t0 + 30s));
  c.store("nodata.example", wire::type::aaaa, answer(0, {}, {soa(900, 600)}), t0);
  CHECK(c.find("nodata.example", wire::type::aaaa, t0 + 119s));
  CHECK_FALSE(c.find("nodata.example", wire::type::aaaa, t0 + 120s));
  c.store("bare.example", wire::type::a, answer(3, {}), t0);
  CHECK_FALSE(c.find("bare.example", wire::type::a, t0));
}

TEST_CASE("SERVFAIL, truncated answers and TTL 0 are never cached") {
  answer_cache c;
  c.store("a.example", wire::type::a, answer(2, {a_record(300)}), t0);
  auto tc = answer(0, {a_record(300)});
  tc.hdr.flags |= 0x0200;
  c.store("b.example", wire::type::a, tc, t0);
  c.store("c.example", wire::type::a, answer(0, {a_record(0)}), t0);
  CHECK(c.size() == 0);
}

TEST_CASE("bounded: the least recently used entry goes first") {
  answer_cache c({.max_entries = 2});
  c.store("1.example", wire::type::a, answer(0, {a_record(300)}), t0);
  c.store("2.example", wire::type::a, answer(0, {a_record(300)}), t0);
  CHECK(c.find("1.example", wire::type::a, t0));  // 1 is now the most recent
  c.store("3.example", wire::type::a, answer(0, {a_record(300)}), t0);
  CHECK(c.size() == 2);
  CHECK(c.find("1.example", wire::type::a, t0));
  CHECK_FALSE(c.find("2.example", wire::type::a, t0));
  CHECK(c.find("3.example", wire::type::a, t0));
}
