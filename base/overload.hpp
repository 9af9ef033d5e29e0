#pragma once
// Memory pressure (ROBUSTNESS D5), after Envoy's overload manager: the daemon's memory
// against a limit, sampled on a timer, sets a level every loop and the DNS server read
// before taking on new work.
//
//   normal     below 95 %
//   shrinking  from 95 %: the answer cache is cut to a quarter, expired names are dropped,
//              and new connections get a quarter of the peek and idle timeouts
//   refusing   from 98 %: new connections and DNS queries are refused, logged as
//              limit_exceeded with limit:memory; connections already relayed go on
//
// Each level is left only a step lower (shrinking below 90 %, refusing below 95 %), so a
// pressure that hovers at a threshold does not flap.
#include <atomic>
#include <cstdint>
#include <optional>
#include <string>

namespace airlock::base {

enum class overload_level : std::uint8_t { normal, shrinking, refusing };

const char* to_string(overload_level l) noexcept;

// The level after `now` for `pressure` (memory used / limit; 1.0 is the limit).
overload_level next_level(overload_level now, double pressure) noexcept;

// A pressure read from a file holding a number (0.97, or 97%): Envoy's injected resource,
// for drills and tests. nullopt when the file is missing or holds no number.
std::optional<double> pressure_from_file(const std::string& path);

// This process's resident memory, in bytes (from /proc/self/statm); 0 when unreadable.
std::uint64_t resident_bytes();

// The level, shared: written by the sampler on the first loop, read anywhere.
class overload_state {
 public:
  overload_level level() const noexcept { return level_.load(std::memory_order_relaxed); }
  bool refusing() const noexcept { return level() == overload_level::refusing; }
  bool shrinking() const noexcept { return level() != overload_level::normal; }
  double pressure() const noexcept { return pressure_.load(std::memory_order_relaxed); }
  // Records a sample; the level it moves to.
  overload_level observe(double pressure) noexcept {
    pressure_.store(pressure, std::memory_order_relaxed);
    const auto next = next_level(level(), pressure);
    level_.store(next, std::memory_order_relaxed);
    return next;
  }

 private:
  std::atomic<overload_level> level_{overload_level::normal};
  std::atomic<double> pressure_{0};
};

}  // namespace airlock::base
