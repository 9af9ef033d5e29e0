#pragma once
// A token bucket: `rate` tokens a second, at most `burst` saved up. Time is passed in,
// so tests and callers own the clock.
#include <algorithm>
#include <chrono>

namespace airlock::core {

class token_bucket {
 public:
  using clock = std::chrono::steady_clock;

  token_bucket(double rate_per_second, double burst, clock::time_point now)
      : rate_(rate_per_second), burst_(burst), tokens_(burst), last_(now) {}

  // Takes one token if there is one.
  bool take(clock::time_point now) noexcept {
    if (now > last_) {
      const double elapsed = std::chrono::duration<double>(now - last_).count();
      tokens_ = std::min(burst_, tokens_ + elapsed * rate_);
      last_ = now;
    }
    if (tokens_ < 1.0) return false;
    tokens_ -= 1.0;
    return true;
  }

 private:
  double rate_;
  double burst_;
  double tokens_;
  clock::time_point last_;
};

}  // namespace airlock::core
