#pragma once
// A token bucket: `rate` tokens a second, at most `burst` saved up. Time is passed in,
// so tests and callers own the clock.
//
// Kept as one timestamp, the generic cell rate algorithm's "theoretical arrival time"
// (ITU-T I.371): a token is free when that time is at most `burst - 1` intervals ahead of
// now, and taking one moves it an interval on. One word, so a bucket shared by several
// event loops is taken with a compare-and-swap, never a lock.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>

namespace airlock::base {

class token_bucket {
 public:
  using clock = std::chrono::steady_clock;

  // A rate of 0 (or less) never gives a token.
  token_bucket(double rate_per_second, double burst, clock::time_point now)
      : interval_(rate_per_second > 0 ? nanoseconds(1.0 / rate_per_second) : never),
        tolerance_(rate_per_second > 0 ? nanoseconds((burst - 1.0) / rate_per_second) : -1),
        arrival_(ns(now)) {}
  token_bucket(const token_bucket&) = delete;
  token_bucket& operator=(const token_bucket&) = delete;

  // Takes one token if there is one.
  bool take(clock::time_point now) noexcept {
    const std::int64_t t = ns(now);
    std::int64_t arrival = arrival_.load(std::memory_order_relaxed);
    for (;;) {
      const std::int64_t from = std::max(arrival, t);
      if (tolerance_ < 0 || from - t > tolerance_) return false;
      if (arrival_.compare_exchange_weak(arrival, sum(from, interval_), std::memory_order_relaxed)) return true;
    }
  }

 private:
  static std::int64_t ns(clock::time_point t) noexcept {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
  }
  static constexpr std::int64_t never = std::numeric_limits<std::int64_t>::max() / 4;
  // Seconds as nanoseconds, saturated: a tiny rate gives an interval no clock reaches, not
  // an overflow. Below zero (a burst under one token) is -1: never a token.
  static std::int64_t nanoseconds(double seconds) noexcept {
    if (seconds < 0) return -1;
    if (!(seconds * 1e9 < static_cast<double>(never))) return never;
    return std::llround(seconds * 1e9);
  }
  static std::int64_t sum(std::int64_t a, std::int64_t b) noexcept {
    return a > std::numeric_limits<std::int64_t>::max() - b ? std::numeric_limits<std::int64_t>::max() : a + b;
  }

  const std::int64_t interval_;
  const std::int64_t tolerance_;  // how far ahead of now the arrival time may be; < 0: never a token
  std::atomic<std::int64_t> arrival_;
};

}  // namespace airlock::base
