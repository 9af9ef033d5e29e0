// libFuzzer target for base::read_cgroup_layout and base::cpu_quota's parsers. The input is
// split at its first NUL into /proc/self/mountinfo and /proc/self/cgroup (the whole of it
// also read as cpu.max and as cpu.cfs_quota_us): whatever the bytes, a v2 cgroup is an
// absolute path or none, a v1 cgroup lies under its mount, and a CPU count is positive and
// finite or none.
#include "base/cgroup_layout.hpp"
#include "base/cpu_quota.hpp"

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

namespace q = airlock::base::cpu_quota;

namespace {

void check_cpus(std::optional<double> cpus) {
  if (cpus && !(std::isfinite(*cpus) && *cpus > 0 && q::loops_for(*cpus) >= 1)) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const auto cut = text.find('\0');
  const auto mountinfo = text.substr(0, cut);
  const auto own = cut == std::string_view::npos ? std::string_view() : text.substr(cut + 1);
  const auto none = [](const std::filesystem::path&) { return std::string(); };
  const auto l = airlock::base::read_cgroup_layout(mountinfo, own, none);
  if (!l.v2_own.empty() && l.v2_own.front() != '/') std::abort();
  for (const auto* v1 : {&l.memory, &l.pids, &l.cpu})
    if (*v1 && (*v1)->own.string().rfind((*v1)->mount.string(), 0) != 0) std::abort();
  check_cpus(q::cpus_of(text));
  check_cpus(q::cpus_of_v1(mountinfo, own));
  check_cpus(q::limit(l, none));
  return 0;
}
