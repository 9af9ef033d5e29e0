// The limiter: daemon-wide caps, per-session caps and budgets, and copies (one per event
// loop) sharing one set of counters from several threads.
#include "proxy/limits.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <limits>
#include <memory>
#include <thread>
#include <vector>

namespace {

using airlock::policy::limits_config;
using airlock::proxy::limiter;

TEST_CASE("the connection over the daemon-wide cap is refused, and a closed one frees its place") {
  limits_config l;
  l.connections = 2;
  limiter lim(l);
  auto a = std::unique_ptr<limiter::ticket>(new limiter::ticket(lim.accept()));
  auto b = lim.accept();
  {
    auto c = lim.accept();
    CHECK(c.refused() == "connections");
  }
  CHECK(a->refused().empty());
  CHECK(b.refused().empty());
  a.reset();
  auto d = lim.accept();
  CHECK(d.refused().empty());
  CHECK(lim.open() == 2);
}

TEST_CASE("pending handshakes count until judged") {
  limits_config l;
  l.pending_handshakes = 1;
  limiter lim(l);
  auto a = lim.accept();
  CHECK(lim.pending() == 1);
  {
    auto b = lim.accept();
    CHECK(b.refused() == "pending_handshakes");
  }
  a.judged();
  CHECK(lim.pending() == 0);
  auto c = lim.accept();
  CHECK(c.refused().empty());
}

TEST_CASE("full() names the daemon-wide cap reached, so the listeners stop accepting at it") {
  limits_config l;
  l.connections = 3;
  l.pending_handshakes = 2;
  limiter lim(l);
  const limiter other_loop(lim);  // a copy shares the counters
  CHECK(lim.full().empty());
  auto a = lim.accept();
  auto b = lim.accept();
  CHECK(other_loop.full() == "pending_handshakes");
  a.judged();
  CHECK(other_loop.full().empty());
  auto c = lim.accept();
  c.judged();
  b.judged();
  CHECK(other_loop.full() == "connections");  // 3 open, none pending
}

TEST_CASE(
    "a session's pending handshakes are capped on their own: one session's silent connections leave the others room") {
  limits_config l;
  l.pending_handshakes = 100;
  l.session_pending_handshakes = 2;
  limiter lim(l);
  auto a1 = lim.accept();
  auto a2 = lim.accept();
  CHECK(a1.admit("a").empty());
  CHECK(a2.admit("a").empty());
  {
    auto a3 = lim.accept();
    CHECK(a3.refused().empty());  // under the daemon-wide cap
    CHECK(a3.admit("a") == "session_pending_handshakes");
  }
  auto b1 = lim.accept();
  CHECK(b1.admit("b").empty());  // another session is not held up by a's
  a1.judged();                   // judged: no longer pending, still open
  auto a4 = lim.accept();
  CHECK(a4.admit("a").empty());
  CHECK(lim.pending() == 3);  // a2, b1, a4
  // Judged connections do not count: a session may hold many open ones.
  a2.judged();
  a4.judged();
  auto a5 = lim.accept();
  auto a6 = lim.accept();
  CHECK(a5.admit("a").empty());
  CHECK(a6.admit("a").empty());
}

TEST_CASE("a session's byte budget cuts the relay and refuses its next connection") {
  limits_config l;
  l.session_bytes_up = 100;
  limiter lim(l);
  {
    auto t = lim.accept();
    CHECK(t.admit("s1").empty());
    CHECK(t.room(true) == 100);
    CHECK(t.room(false) == std::numeric_limits<std::uint64_t>::max());  // no download budget
    CHECK(t.moved(true, 60));
    CHECK(t.room(true) == 40);  // the relay reads at most one byte more than this
    CHECK_FALSE(t.moved(true, 60));
    CHECK(t.room(true) == 0);
    CHECK(t.spent() == "session_bytes_up");
  }
  auto next = lim.accept();
  CHECK(next.admit("s1") == "session_bytes_up");
  auto other = lim.accept();
  CHECK(other.admit("s2").empty());
}

TEST_CASE("copies of a limiter on several threads share one session cap") {
  limits_config l;
  l.session_connections = 50;
  const limiter original(l);
  constexpr int threads = 4, per_thread = 40;
  std::atomic<int> admitted = 0, refused = 0;
  std::atomic<bool> go = false;
  std::vector<std::thread> pool;
  std::vector<std::vector<std::unique_ptr<limiter::ticket>>> held(threads);
  for (int i = 0; i < threads; ++i)
    pool.emplace_back([&, i, copy = original]() mutable {
      while (!go) std::this_thread::yield();
      for (int n = 0; n < per_thread; ++n) {
        auto& t = *held[static_cast<std::size_t>(i)].emplace_back(new limiter::ticket(copy.accept()));
        (t.admit("shared").empty() ? admitted : refused)++;
        t.moved(false, 10);
      }
    });
  go = true;
  for (auto& t : pool) t.join();
  CHECK(admitted == 50);
  CHECK(refused == threads * per_thread - 50);
  CHECK(original.open() == threads * per_thread);
  held.clear();
  CHECK(original.open() == 0);
  CHECK(original.pending() == 0);
}

}  // namespace
