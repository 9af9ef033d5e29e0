#include "core/token_bucket.hpp"

#include <doctest/doctest.h>

using airlock::core::token_bucket;
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
