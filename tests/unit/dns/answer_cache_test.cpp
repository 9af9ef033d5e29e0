#include "dns/answer_cache.hpp"

#include "base/loop_grace.hpp"
#include "unit/loop_thread.hpp"

#include <boost/asio/post.hpp>

#include <doctest/doctest.h>

#include <atomic>
#include <functional>
#include <future>
#include <string>
#include <thread>

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

// 2001:db8::1
wire::record aaaa_record(std::uint32_t ttl) {
  auto r = a_record(ttl);
  r.rtype = wire::type::aaaa;
  r.rdata = std::string("\x20\x01\x0d\xb8", 4) + std::string(11, '\0') + "\x01";
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
  // Never served again, and kept only until the clock hand needs its room: a read writes
  // nothing but a flag, so it cannot drop it.
  CHECK(c.size() == 1);
}

TEST_CASE("bounded: an expired entry gives up its room even when it was read") {
  answer_cache c({.max_entries = 2});
  c.store("short.example", wire::type::a, answer(0, {a_record(10)}), t0);
  c.store("long.example", wire::type::a, answer(0, {a_record(300)}), t0);
  CHECK(c.find("short.example", wire::type::a, t0));  // read: a second chance, were it alive
  c.store("new.example", wire::type::a, answer(0, {a_record(300)}), t0 + 20s);
  CHECK(c.size() == 2);
  CHECK(c.find("long.example", wire::type::a, t0 + 20s));
  CHECK(c.find("new.example", wire::type::a, t0 + 20s));
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

TEST_CASE("bounded: an entry read since the clock hand last passed it gets another round") {
  answer_cache c({.max_entries = 2});
  c.store("1.example", wire::type::a, answer(0, {a_record(300)}), t0);
  c.store("2.example", wire::type::a, answer(0, {a_record(300)}), t0);
  CHECK(c.find("1.example", wire::type::a, t0));  // read: the hand passes over it once
  c.store("3.example", wire::type::a, answer(0, {a_record(300)}), t0);
  CHECK(c.size() == 2);
  CHECK(c.find("1.example", wire::type::a, t0));
  CHECK_FALSE(c.find("2.example", wire::type::a, t0));
  CHECK(c.find("3.example", wire::type::a, t0));
}

// Under ASan (the dev preset) a read that met a freed entry fails this test.
TEST_CASE("shared across loops: the DNS loop stores while another loop reads, without a lock") {
  airlock::test::loop_thread dns_loop, proxy_loop;
  airlock::base::loop_grace grace;
  grace.start(dns_loop.io.get_executor(), {dns_loop.io.get_executor(), proxy_loop.io.get_executor()});
  answer_cache c({.max_entries = 64}, grace);
  const auto now = answer_cache::clock::now();
  std::atomic<bool> stop = false;
  std::atomic<bool> whole = true;  // a hit is never a torn copy
  std::atomic<long> hits = 0;
  std::function<void()> read_some = [&] {
    for (int i = 0; i < 200; ++i)
      if (auto hit = c.find(std::to_string(i % 100) + ".example", wire::type::a, now)) {
        if (hit->answers.size() != 1 || hit->answers[0].rdata.size() != 4) whole = false;
        ++hits;
      }
    if (!stop) boost::asio::post(proxy_loop.io, read_some);
  };
  boost::asio::post(proxy_loop.io, read_some);
  int round = 0;
  std::promise<void> stored;
  std::function<void()> store_some = [&] {  // short handlers: the grace timer runs between
    for (int i = 0; i < 100; ++i)
      c.store(std::to_string(i) + ".example", wire::type::a, answer(0, {a_record(300)}), now);
    if (++round < 200) boost::asio::post(dns_loop.io, store_some);
    else stored.set_value();
  };
  boost::asio::post(dns_loop.io, store_some);
  REQUIRE(stored.get_future().wait_for(30s) == std::future_status::ready);
  stop = true;
  proxy_loop.run_here([] {});
  CHECK(whole);
  CHECK(hits > 0);
  dns_loop.run_here([&] {
    CHECK(c.size() == 64);
    CHECK(c.find("99.example", wire::type::a, now));  // the last one stored
  });
  dns_loop.stop();  // the daemon's order: the loops stop, then the grace goes
  proxy_loop.stop();
}

// ---- dns/lookup.hpp: what another event loop may take from the cache without a hop ----

#include "dns/address_memo.hpp"
#include "dns/lookup.hpp"

namespace {

// The one address found, as text: "" when none, "many" when more than one, "-" when the
// cache alone cannot say.
std::string only(const std::vector<boost::asio::ip::address>& found) {
  if (found.size() > 1) return "many";
  return found.empty() ? "" : found.front().to_string();
}
std::string only(const std::optional<airlock::dns::found_addresses>& found) {
  return found ? only(found->addresses) : "-";
}

}  // namespace

TEST_CASE("cached_addresses: what lookup_addresses would say, only when the cache alone can say it") {
  using airlock::dns::cached_addresses;
  answer_cache c;
  const auto name = *airlock::policy::domain_name::parse("example.com");
  const auto now = answer_cache::clock::now();
  CHECK_FALSE(cached_addresses(c, name));  // nothing cached: the DNS loop must ask

  c.store("example.com", wire::type::a, answer(0, {a_record(300)}), now);
  CHECK(only(cached_addresses(c, name)) == "203.0.113.10");

  // No A records (NODATA cached), AAAA not cached: not for the cache alone to say.
  const auto v6only = *airlock::policy::domain_name::parse("v6.example.com");
  c.store("v6.example.com", wire::type::a, answer(0, {}, {soa(900, 600)}), now);
  CHECK_FALSE(cached_addresses(c, v6only));
  c.store("v6.example.com", wire::type::aaaa, answer(0, {aaaa_record(300)}), now);
  CHECK(only(cached_addresses(c, v6only)) == "2001:db8::1");
}

TEST_CASE(
    "cached_addresses: AAAA first for a client that used IPv6, A only when there is no AAAA; cached_addresses_of") {
  using airlock::dns::ask_first;
  using airlock::dns::cached_addresses;
  answer_cache c;
  const auto now = answer_cache::clock::now();

  // Dual stack: each order gives its own family, and only that one.
  const auto dual = *airlock::policy::domain_name::parse("dual.example.com");
  c.store("dual.example.com", wire::type::a, answer(0, {a_record(300)}), now);
  CHECK_FALSE(cached_addresses(c, dual, ask_first::aaaa));  // AAAA not cached: ask upstream
  c.store("dual.example.com", wire::type::aaaa, answer(0, {aaaa_record(300)}), now);
  CHECK(only(cached_addresses(c, dual, ask_first::aaaa)) == "2001:db8::1");
  CHECK(only(cached_addresses(c, dual)) == "203.0.113.10");

  // No AAAA records (NODATA cached): the A records, as for an IPv4 client.
  const auto v4only = *airlock::policy::domain_name::parse("v4.example.com");
  c.store("v4.example.com", wire::type::aaaa, answer(0, {}, {soa(900, 600)}), now);
  c.store("v4.example.com", wire::type::a, answer(0, {a_record(300)}), now);
  CHECK(only(cached_addresses(c, v4only, ask_first::aaaa)) == "203.0.113.10");

  // One type only, from the cache only: what is there, else nothing.
  using airlock::dns::cached_addresses_of;
  CHECK(only(cached_addresses_of(c, dual, wire::type::aaaa)) == "2001:db8::1");
  CHECK(cached_addresses_of(c, v4only, wire::type::aaaa).empty());  // NODATA
  CHECK(cached_addresses_of(c, *airlock::policy::domain_name::parse("none.example.com"), wire::type::a).empty());
}

// ---- dns/query.hpp: what the cache lets the UDP listener answer without a coroutine ----

#include "dns/query.hpp"
#include "unit/policy/support.hpp"

#include <boost/asio/io_context.hpp>

namespace {

struct collected_lines final : airlock::record::decision_sink {
  std::vector<airlock::record::decision_record> lines;
  void emit(const airlock::record::decision_record& r) noexcept override { lines.push_back(r); }
};

struct query_fixture {
  boost::asio::io_context io;
  airlock::policy::store policies{airlock::policy::test::compile(R"(version: 1
policies:
  p:
    allow:
      - host: ok.test
sessions:
  - id: s1
    source: 127.0.0.1/32
    policy: p
)")};
  std::unique_ptr<airlock::dns::resolver> upstream = [this] {
    airlock::dns::resolver::options o;
    o.servers.push_back({boost::asio::ip::make_address("127.0.0.1"), 9});  // never asked here
    auto r = airlock::dns::resolver::create(io.get_executor(), o);
    REQUIRE(r.has_value());
    return std::move(*r);
  }();
  collected_lines log;
  airlock::dns::name_table names;
  answer_cache cache;
  airlock::dns::query_context ctx{policies, *upstream, log, names, cache};
  const boost::asio::ip::address client = boost::asio::ip::make_address("127.0.0.1");

  std::string packet(const char* name, std::uint16_t id) {
    return wire::build_query(id, *wire::name_from_text(name), wire::type::a);
  }
};

std::span<const std::byte> bytes(const std::string& s) { return std::as_bytes(std::span(s.data(), s.size())); }

}  // namespace

TEST_CASE("started_query: a cache hit and a denial are answered by begin(), one line each, emitted as it goes") {
  query_fixture f;
  wire::message cached;
  cached.hdr.flags = 0x8180;
  cached.questions.push_back({*wire::name_from_text("ok.test"), wire::type::a, wire::class_in});
  auto rr = a_record(300);
  rr.owner = *wire::name_from_text("ok.test");
  cached.answers.push_back(rr);
  f.cache.store("ok.test", wire::type::a, cached, answer_cache::clock::now());

  {
    const auto q = f.packet("OK.test", 0x1234);
    airlock::dns::started_query query(f.ctx, f.client, 5353, true);
    REQUIRE(query.begin(bytes(q), f.io.get_executor()));
    REQUIRE(query.reply().has_value());
    auto reply = wire::parse_message(bytes(*query.reply()));
    REQUIRE(reply.has_value());
    CHECK(reply->hdr.id == 0x1234);
    CHECK(reply->questions.at(0).qname.to_text() == "OK.test");  // the client's casing
    REQUIRE(reply->answers.size() == 1);
    CHECK(f.log.lines.empty());  // not before the query is done with
  }
  REQUIRE(f.log.lines.size() == 1);
  CHECK(f.log.lines[0].verdict == airlock::policy::verdict::allow);
  CHECK(f.log.lines[0].notes == std::vector<std::string>{"cache_hit"});
  CHECK(f.log.lines[0].answers == std::vector<std::string>{"203.0.113.10"});
  CHECK(f.log.lines[0].client == "127.0.0.1:5353");

  {
    const auto q = f.packet("exfil.evil.test", 7);
    airlock::dns::started_query query(f.ctx, f.client, 5353, true);
    REQUIRE(query.begin(bytes(q), f.io.get_executor()));
    auto reply = wire::parse_message(bytes(*query.reply()));
    REQUIRE(reply.has_value());
    CHECK(reply->hdr.rcode_bits() == static_cast<std::uint8_t>(wire::rcode::nxdomain));
  }
  REQUIRE(f.log.lines.size() == 2);
  CHECK(f.log.lines[1].verdict == airlock::policy::verdict::deny);
  CHECK(f.log.lines[1].rcode == "NXDOMAIN");
}

TEST_CASE("started_query: a miss is left to finish(); a moved query emits its line once, from where it went") {
  query_fixture f;
  const auto q = f.packet("ok.test", 9);
  std::optional<airlock::dns::started_query> moved;
  {
    airlock::dns::started_query query(f.ctx, f.client, 5353, true);
    CHECK_FALSE(query.begin(bytes(q), f.io.get_executor()));  // not cached: the upstream is needed
    moved.emplace(std::move(query));
  }
  CHECK(f.log.lines.empty());
  moved.reset();  // never finished (the loop went away): still exactly one line
  REQUIRE(f.log.lines.size() == 1);
  CHECK(f.log.lines[0].name == "ok.test");
  CHECK(f.log.lines[0].verdict == airlock::policy::verdict::allow);
}

TEST_CASE("shrink drops the least recently used answers down to what it keeps") {
  answer_cache c;
  for (const char* n : {"a.test", "b.test", "c.test", "d.test"})
    c.store(n, wire::type::a, answer(0, {a_record(300)}), t0);
  REQUIRE(c.find("a.test", wire::type::a, t0));  // a is now the most recently used
  CHECK(c.shrink(2) == 2);
  CHECK(c.size() == 2);
  CHECK(c.find("a.test", wire::type::a, t0));
  CHECK(c.find("d.test", wire::type::a, t0));
  CHECK_FALSE(c.find("b.test", wire::type::a, t0));
  CHECK_FALSE(c.find("c.test", wire::type::a, t0));
  CHECK(c.shrink(5) == 0);
}

TEST_CASE("cached_addresses: the TTL is the smallest of the answer's records, as aged in the cache") {
  using airlock::dns::cached_addresses;
  answer_cache c;
  const auto name = *airlock::policy::domain_name::parse("example.com");
  c.store("example.com", wire::type::a, answer(0, {a_record(300), a_record(90)}), answer_cache::clock::now() - 30s);
  const auto found = cached_addresses(c, name);
  REQUIRE(found);
  CHECK(found->addresses.size() == 2);
  CHECK(found->ttl >= 59);
  CHECK(found->ttl <= 60);
}

TEST_CASE("address_memo: a loop's own note of what a name resolved to, for its TTL and at most a minute") {
  using airlock::dns::address_memo;
  using airlock::dns::ask_first;
  using airlock::dns::found_addresses;
  address_memo memo;
  const auto v4 = boost::asio::ip::make_address("203.0.113.10");
  const auto v6 = boost::asio::ip::make_address("2001:db8::1");
  CHECK(memo.find("example.com", ask_first::a, t0) == nullptr);

  memo.keep("example.com", ask_first::a, found_addresses{{v4}, 30}, t0);
  memo.keep("example.com", ask_first::aaaa, found_addresses{{v6}, 3600}, t0);
  REQUIRE(memo.find("example.com", ask_first::a, t0 + 29s) != nullptr);
  CHECK(only(*memo.find("example.com", ask_first::a, t0 + 29s)) == "203.0.113.10");
  CHECK(only(*memo.find("example.com", ask_first::aaaa, t0)) == "2001:db8::1");  // each order its own
  CHECK(memo.find("example.com", ask_first::a, t0 + 30s) == nullptr);            // the TTL is over
  CHECK(memo.find("example.com", ask_first::aaaa, t0 + 59s) != nullptr);
  CHECK(memo.find("example.com", ask_first::aaaa, t0 + 60s) == nullptr);  // never past a minute
  CHECK(memo.find("example.co", ask_first::a, t0) == nullptr);

  // Nothing to keep: no address, or a TTL of 0 (the answer must not outlive its use).
  memo.keep("none.example", ask_first::a, found_addresses{{}, 300}, t0);
  memo.keep("zero.example", ask_first::a, found_addresses{{v4}, 0}, t0);
  CHECK(memo.find("none.example", ask_first::a, t0) == nullptr);
  CHECK(memo.find("zero.example", ask_first::a, t0) == nullptr);

  // Bounded: full, it forgets everything and starts again.
  for (std::size_t i = 0; i < address_memo::max_names + 1; ++i)
    memo.keep("n" + std::to_string(i) + ".example", ask_first::a, found_addresses{{v4}, 300}, t0);
  CHECK(memo.size() <= address_memo::max_names);
  CHECK(memo.find("n0.example", ask_first::a, t0) == nullptr);
  CHECK(memo.find("n" + std::to_string(address_memo::max_names) + ".example", ask_first::a, t0) != nullptr);
}
