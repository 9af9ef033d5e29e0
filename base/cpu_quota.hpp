#pragma once
// How many CPUs the process's cgroups let it use: `threads: auto` counts the CPUs it may run
// on (affinity), and a container limited to one CPU on a sixteen-CPU host would otherwise
// run sixteen loops that the kernel throttles in turn. The parsers are pure functions over
// the kernel's text (tests/fuzz/fuzz_cgroup.cpp).
#include "base/cgroup_layout.hpp"

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace airlock::base::cpu_quota {

using reader = std::function<std::string(const std::filesystem::path&)>;

// cgroup v2's cpu.max ("QUOTA PERIOD", or "max PERIOD" for none) as CPUs: "150000 100000"
// is 1.5. nullopt for no limit or a text that is not one.
std::optional<double> cpus_of(std::string_view cpu_max);
// cgroup v1's cpu.cfs_quota_us ("-1" for none) over cpu.cfs_period_us, the same way.
std::optional<double> cpus_of_v1(std::string_view cfs_quota_us, std::string_view cfs_period_us);

// The smallest limit in `l` on the way from this process's cgroup up to its hierarchy's
// root (included: in a container with a cgroup namespace of its own, the root is the
// container's cgroup), v2 and v1 alike. `read` gives a file's text, empty when it cannot.
// nullopt: no limit.
std::optional<double> limit(const cgroup_layout& l, const reader& read);

// Event loops for `cpus` of quota: rounded up (1.5 CPUs keep two loops busy), at least one.
unsigned loops_for(double cpus);

// This process's limit, from /proc/self/mountinfo and /proc/self/cgroup.
std::optional<double> of_this_process();

}  // namespace airlock::base::cpu_quota
