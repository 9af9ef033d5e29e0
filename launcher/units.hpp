#pragma once
// The quantities moved to policy/units.hpp (the config's limits: use them too).
#include "policy/units.hpp"

namespace airlock::launcher {
using policy::format_duration;
using policy::format_size;
using policy::parse_count;
using policy::parse_cpus;
using policy::parse_duration;
using policy::parse_size;
template <typename T>
using parsed = policy::parsed<T>;
}  // namespace airlock::launcher
