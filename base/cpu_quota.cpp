#include "base/cpu_quota.hpp"

#include "base/small_file.hpp"
#include "base/trim.hpp"

#include <charconv>
#include <cmath>
#include <cstdint>

namespace airlock::base::cpu_quota {
namespace {

namespace fs = std::filesystem;

std::optional<std::uint64_t> number(std::string_view s) {
  std::uint64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc{} || end != s.data() + s.size()) return std::nullopt;
  return v;
}

std::optional<double> ratio(std::string_view quota, std::string_view period) {
  const auto q = number(trim(quota)), p = number(trim(period));
  if (!q || !p || *q == 0 || *p == 0) return std::nullopt;
  return static_cast<double>(*q) / static_cast<double>(*p);
}

// The smallest of `of(dir)` for `own` and each parent up to `mount`, both included. An
// `own` outside `mount` (a cgroup path with "..": outside the namespace's root) gives none.
template <typename Of>
std::optional<double> least_up_to(const fs::path& mount, const fs::path& own, Of of) {
  fs::path rel = own.lexically_normal().lexically_relative(mount.lexically_normal());
  if (rel.empty() || *rel.begin() == "..") return std::nullopt;
  std::optional<double> least;
  for (;;) {
    const fs::path dir = rel == "." ? mount : mount / rel;
    if (const auto cpus = of(dir); cpus && (!least || *cpus < *least)) least = cpus;
    if (rel == "." || rel.empty()) break;
    rel = rel.parent_path();
    if (rel.empty()) rel = ".";
  }
  return least;
}

// A file that cannot be read reads as empty: no quota found there.
std::string text_of(const fs::path& p) {
  auto text = read_file(p);
  return text ? std::move(*text) : std::string();
}

}  // namespace

std::optional<double> cpus_of(std::string_view cpu_max) {
  const auto line = trim(cpu_max);
  const auto space = line.find(' ');
  if (space == std::string_view::npos) return std::nullopt;
  return ratio(line.substr(0, space), line.substr(space + 1));  // "max": no number, no limit
}

std::optional<double> cpus_of_v1(std::string_view cfs_quota_us, std::string_view cfs_period_us) {
  return ratio(cfs_quota_us, cfs_period_us);  // "-1": no number, no limit
}

std::optional<double> limit(const cgroup_layout& l, const reader& read) {
  std::optional<double> least;
  const auto keep = [&least](std::optional<double> cpus) {
    if (cpus && (!least || *cpus < *least)) least = cpus;
  };
  if (!l.v2_mount.empty() && !l.v2_own.empty())
    keep(least_up_to(l.v2_mount, l.v2_mount / fs::path(l.v2_own).relative_path(),
                     [&](const fs::path& dir) { return cpus_of(read(dir / "cpu.max")); }));
  if (l.cpu)
    keep(least_up_to(l.cpu->mount, l.cpu->own, [&](const fs::path& dir) {
      return cpus_of_v1(read(dir / "cpu.cfs_quota_us"), read(dir / "cpu.cfs_period_us"));
    }));
  return least;
}

unsigned loops_for(double cpus) {
  if (!(cpus >= 1)) return 1;  // also NaN
  if (cpus >= 4096) return 4096;
  return static_cast<unsigned>(std::ceil(cpus));
}

std::optional<double> of_this_process() {
  return limit(read_cgroup_layout(text_of("/proc/self/mountinfo"), text_of("/proc/self/cgroup"), text_of), text_of);
}

}  // namespace airlock::base::cpu_quota
