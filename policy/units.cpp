#include "policy/units.hpp"

#include <array>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <limits>
#include <optional>

namespace airlock::policy {
namespace {

using base::fail;

// A decimal number at the front of `s` ("12", "1.5", ".5"); consumes it.
struct decimal {
  std::uint64_t whole = 0;
  double fraction = 0;  // in [0, 1)
};
std::optional<decimal> take_decimal(std::string_view& s) {
  decimal d;
  std::size_t i = 0;
  bool digits = false;
  for (; i < s.size() && std::isdigit(static_cast<unsigned char>(s[i])); ++i) {
    const auto digit = static_cast<std::uint64_t>(s[i] - '0');
    if (d.whole > (std::numeric_limits<std::uint64_t>::max() - digit) / 10) return std::nullopt;
    d.whole = d.whole * 10 + digit;
    digits = true;
  }
  if (i < s.size() && s[i] == '.') {
    ++i;
    double scale = 0.1;
    for (; i < s.size() && std::isdigit(static_cast<unsigned char>(s[i])); ++i) {
      d.fraction += (s[i] - '0') * scale;
      scale /= 10;
      digits = true;
    }
  }
  if (!digits) return std::nullopt;
  s.remove_prefix(i);
  return d;
}

// whole * unit + fraction * unit, or nothing past `max`.
std::optional<std::uint64_t> scale(const decimal& d, std::uint64_t unit, std::uint64_t max) {
  if (d.whole > max / unit) return std::nullopt;
  const auto frac = static_cast<std::uint64_t>(std::llround(d.fraction * static_cast<double>(unit)));
  const auto v = d.whole * unit;
  if (v > max - frac) return std::nullopt;
  return v + frac;
}

char lower(char c) { return static_cast<char>(std::tolower(static_cast<unsigned char>(c))); }

}  // namespace

base::result<std::uint64_t> parse_size(std::string_view text) {
  const std::string expected = "'" + std::string(text) +
                               "': expected a size like 512M or 2G (K, M, G, T are powers of 1024)";
  std::string_view s = text;
  auto d = take_decimal(s);
  if (!d) return fail<std::uint64_t>(expected);
  std::uint64_t unit = 1;
  if (!s.empty()) {
    switch (lower(s.front())) {
      case 'k': unit = 1ULL << 10; break;
      case 'm': unit = 1ULL << 20; break;
      case 'g': unit = 1ULL << 30; break;
      case 't': unit = 1ULL << 40; break;
      case 'b': unit = 1; break;
      default: return fail<std::uint64_t>(expected);
    }
    if (lower(s.front()) != 'b') {
      s.remove_prefix(1);
      if (!s.empty() && lower(s.front()) == 'i') s.remove_prefix(1);
      if (!s.empty() && lower(s.front()) == 'b') s.remove_prefix(1);
    } else {
      s.remove_prefix(1);
    }
  }
  if (!s.empty()) return fail<std::uint64_t>(expected);
  auto v = scale(*d, unit, 1ULL << 62);
  if (!v) return fail<std::uint64_t>("'" + std::string(text) + "': too large");
  if (*v == 0) return fail<std::uint64_t>("'" + std::string(text) + "': must be at least one byte");
  return *v;
}

base::result<std::chrono::milliseconds> parse_duration(std::string_view text) {
  using std::chrono::milliseconds;
  const std::string expected = "'" + std::string(text) +
                               "': expected a duration like 90s, 5m, 1h30m or 250ms (a bare number is seconds)";
  constexpr std::uint64_t max_ms = 30ULL * 24 * 3600 * 1000;
  std::string_view s = text;
  std::uint64_t total = 0;
  bool any = false;
  while (!s.empty() || !any) {
    auto d = take_decimal(s);
    if (!d) return fail<milliseconds>(expected);
    std::uint64_t unit = 1000;  // a bare number is seconds, but only alone
    if (s.starts_with("ms")) {
      unit = 1, s.remove_prefix(2);
    } else if (!s.empty() && (s.front() == 's' || s.front() == 'm' || s.front() == 'h' || s.front() == 'd')) {
      unit = s.front() == 's' ? 1000 : s.front() == 'm' ? 60'000 : s.front() == 'h' ? 3'600'000 : 86'400'000;
      s.remove_prefix(1);
    } else if (any || !s.empty()) {
      return fail<milliseconds>(expected);
    }
    auto v = scale(*d, unit, max_ms);
    if (!v || total > max_ms - *v) return fail<milliseconds>("'" + std::string(text) + "': longer than 30 days");
    total += *v;
    any = true;
  }
  if (total == 0) return fail<milliseconds>("'" + std::string(text) + "': must be at least 1ms");
  return milliseconds(static_cast<milliseconds::rep>(total));
}

base::result<double> parse_cpus(std::string_view text) {
  const std::string expected = "'" + std::string(text) +
                               "': expected a number of CPUs from 0.01 to 1024, like 0.5 or 2";
  std::string_view s = text;
  auto d = take_decimal(s);
  if (!d || !s.empty() || d->whole > 1024) return fail<double>(expected);
  const double v = static_cast<double>(d->whole) + d->fraction;
  if (v < 0.01 || v > 1024) return fail<double>(expected);
  return v;
}

base::result<std::uint64_t> parse_count(std::string_view text, std::uint64_t min, std::uint64_t max) {
  const std::string expected = "'" + std::string(text) + "': expected a whole number from " + std::to_string(min) +
                               " to " + std::to_string(max);
  std::string_view s = text;
  auto d = take_decimal(s);
  if (!d || !s.empty() || d->fraction != 0 || text.find('.') != std::string_view::npos)
    return fail<std::uint64_t>(expected);
  if (d->whole < min || d->whole > max) return fail<std::uint64_t>(expected);
  return d->whole;
}

std::string format_size(std::uint64_t bytes) {
  constexpr std::array<const char*, 5> units = {"B", "KiB", "MiB", "GiB", "TiB"};
  std::size_t u = 0;
  double v = static_cast<double>(bytes);
  while (v >= 1024 && u + 1 < units.size()) v /= 1024, ++u;
  char buf[32];
  if (u == 0 || v >= 100 || v == std::floor(v)) std::snprintf(buf, sizeof buf, "%.0f %s", v, units[u]);
  else std::snprintf(buf, sizeof buf, "%.1f %s", v, units[u]);
  return buf;
}

std::string format_duration(std::chrono::milliseconds d) {
  auto ms = static_cast<std::uint64_t>(d.count());
  if (ms % 1000 != 0) return std::to_string(ms) + "ms";
  auto s = ms / 1000;
  std::string out;
  if (s >= 3600) out += std::to_string(s / 3600) + "h", s %= 3600;
  if (s >= 60) out += std::to_string(s / 60) + "m", s %= 60;
  if (s != 0 || out.empty()) out += std::to_string(s) + "s";
  return out;
}

}  // namespace airlock::policy
