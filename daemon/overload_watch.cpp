#include "daemon/overload_watch.hpp"

#include "base/deadline.hpp"

#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>

#include <chrono>
#include <cstdio>
#include <optional>

#include <malloc.h>

namespace airlock::daemon {

namespace asio = boost::asio;

namespace {

std::optional<double> sample(const policy::overload_config& cfg) {
  if (!cfg.pressure_file.empty()) return base::pressure_from_file(cfg.pressure_file);
  const auto used = base::resident_bytes();
  if (used == 0) return std::nullopt;
  return static_cast<double>(used) / static_cast<double>(cfg.memory_limit);
}

}  // namespace

asio::awaitable<void> watch_memory(const policy::overload_config& cfg, base::overload_state& state,
                                   const std::atomic<bool>& stopping, overload_changed changed) {
  if (cfg.memory_limit == 0 && cfg.pressure_file.empty()) co_return;
  asio::steady_timer tick(co_await asio::this_coro::executor);
  bool said_unreadable = false;
  while (!stopping.load()) {
    // Under pressure, memory freed since the last sample goes back to the system first
    // (glibc keeps freed pages otherwise), so the resident figure falls as the load does
    // and a level that went up can come down.
    if (state.shrinking()) ::malloc_trim(0);
    if (const auto pressure = sample(cfg)) {
      said_unreadable = false;
      const auto before = state.level();
      const auto after = state.observe(*pressure);
      if (after != before && changed) changed(before, after, *pressure);
    } else if (!std::exchange(said_unreadable, true)) {
      // No reading leaves the level where it is: neither fail open nor refuse on a typo.
      std::fprintf(stderr, "airlock: memory pressure: cannot read %s; keeping level %s\n",
                   cfg.pressure_file.empty() ? "/proc/self/statm" : cfg.pressure_file.c_str(),
                   to_string(state.level()));
    }
    tick.expires_after(std::chrono::milliseconds(250));
    auto [ec] = co_await tick.async_wait(base::nothrow);
    if (ec) co_return;
  }
}

}  // namespace airlock::daemon
