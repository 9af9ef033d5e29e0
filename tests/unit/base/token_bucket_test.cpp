#include "base/token_bucket.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <thread>
#include <vector>

using airlock::base::token_bucket;
using namespace std::chrono_literals;

TEST_CASE("a burst is allowed, then the rate") {
  const auto t0 = token_bucket::clock::time_point{} + 1h;
  token_bucket b(10, 3, t0);
  CHECK(b.take(t0));
  CHECK(b.take(t0));
  CHECK(b.take(t0));
  CHECK_FALSE(b.take(t0));
  CHECK_FALSE(b.take(t0 + 99ms));
  CHECK(b.take(t0 + 100ms));
  CHECK_FALSE(b.take(t0 + 100ms));
  // a long pause refills to the burst, not beyond
  CHECK(b.take(t0 + 1h));
  CHECK(b.take(t0 + 1h));
  CHECK(b.take(t0 + 1h));
  CHECK_FALSE(b.take(t0 + 1h));
}

TEST_CASE("time going backwards never adds tokens") {
  const auto t0 = token_bucket::clock::time_point{} + 1h;
  token_bucket b(1, 1, t0);
  CHECK(b.take(t0));
  CHECK_FALSE(b.take(t0 - 10s));
  CHECK_FALSE(b.take(t0));
}

TEST_CASE("a rate of 0 never gives a token, and a burst under one token gives none") {
  const auto t0 = token_bucket::clock::time_point{} + 1h;
  token_bucket none(0, 5, t0);
  CHECK_FALSE(none.take(t0));
  CHECK_FALSE(none.take(t0 + 24h));
  token_bucket tiny(10, 0.5, t0);
  CHECK_FALSE(tiny.take(t0 + 1h));
}

TEST_CASE("a tiny rate saturates instead of overflowing") {
  const auto t0 = token_bucket::clock::time_point{} + 1h;
  token_bucket b(1e-30, 2, t0);
  CHECK(b.take(t0));
  CHECK(b.take(t0));
  CHECK_FALSE(b.take(t0 + 24h));
}

TEST_CASE("threads taking from one bucket at once get exactly the burst between them") {
  const auto t0 = token_bucket::clock::time_point{} + 1h;
  token_bucket b(1, 1000, t0);
  std::atomic<int> taken = 0;
  std::atomic<bool> go = false;
  std::vector<std::thread> pool;
  for (int i = 0; i < 4; ++i)
    pool.emplace_back([&] {
      while (!go) std::this_thread::yield();
      for (int n = 0; n < 500; ++n)
        if (b.take(t0)) ++taken;
    });
  go = true;
  for (auto& t : pool) t.join();
  CHECK(taken == 1000);
}
