#include "base/overload.hpp"

#include "base/small_file.hpp"
#include "base/trim.hpp"

#include <charconv>
#include <cstdio>
#include <string_view>

#include <unistd.h>

namespace airlock::base {

const char* to_string(overload_level l) noexcept {
  switch (l) {
    case overload_level::normal: return "normal";
    case overload_level::shrinking: return "shrinking";
    case overload_level::refusing: return "refusing";
  }
  return "normal";
}

overload_level next_level(overload_level now, double pressure) noexcept {
  constexpr double shrink_at = 0.95, refuse_at = 0.98;
  constexpr double shrink_until = 0.90, refuse_until = 0.95;
  if (!(pressure == pressure)) return now;  // NaN: no reading, no change
  if (pressure >= refuse_at) return overload_level::refusing;
  switch (now) {
    case overload_level::refusing:
      if (pressure >= refuse_until) return overload_level::refusing;
      return pressure >= shrink_until ? overload_level::shrinking : overload_level::normal;
    case overload_level::shrinking:
      return pressure >= shrink_until ? overload_level::shrinking : overload_level::normal;
    case overload_level::normal: return pressure >= shrink_at ? overload_level::shrinking : overload_level::normal;
  }
  return now;
}

std::optional<double> pressure_from_file(const std::string& path) {
  const auto text = read_file(path);
  if (!text) return std::nullopt;
  std::string_view t = trim(*text);
  const bool percent = !t.empty() && t.back() == '%';
  if (percent) t.remove_suffix(1);
  double value = 0;
  const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), value);
  if (ec != std::errc{} || end != t.data() + t.size() || t.empty() || !(value >= 0)) return std::nullopt;
  return percent ? value / 100 : value;
}

std::uint64_t resident_bytes() {
  std::FILE* f = std::fopen("/proc/self/statm", "re");
  if (f == nullptr) return 0;
  unsigned long long size = 0, resident = 0;
  const int got = std::fscanf(f, "%llu %llu", &size, &resident);
  std::fclose(f);
  if (got != 2) return 0;
  return resident * static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
}

}  // namespace airlock::base
