#pragma once
// The sampler behind base/overload.hpp: every quarter second, the daemon's resident memory
// against overload.memory_limit (or the number in overload.pressure_file) moves the shared
// level; `changed` runs on the sampling loop whenever the level changes. Under pressure each
// sample first hands freed memory back to the system (malloc_trim).
#include "base/overload.hpp"
#include "policy/config.hpp"

#include <boost/asio/awaitable.hpp>

#include <atomic>
#include <functional>

namespace airlock::daemon {

using overload_changed = std::function<void(base::overload_level from, base::overload_level to, double pressure)>;

// Until `stopping`. Watches nothing (returns at once) when the config sets neither a limit
// nor a file.
boost::asio::awaitable<void> watch_memory(const policy::overload_config& cfg, base::overload_state& state,
                                          const std::atomic<bool>& stopping, overload_changed changed);

}  // namespace airlock::daemon
