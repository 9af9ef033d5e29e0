#pragma once
// The command line's quantities: sizes (--memory 512M), durations (--timeout 90s),
// CPU shares (--cpus 1.5) and counts (--pids 256). Pure; each error says what was
// expected, so the caller only prefixes the flag.
#include "base/result.hpp"

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

namespace airlock::policy {

// "1048576", "512K", "512M", "1.5G", "2T" (powers of 1024; an optional trailing B or iB;
// case-insensitive). At least one byte, at most 2^62.
base::result<std::uint64_t> parse_size(std::string_view text);

// "90" (seconds), "250ms", "30s", "5m", "2h", "1h30m", "1.5s". At least 1 ms, at most 30 days.
base::result<std::chrono::milliseconds> parse_duration(std::string_view text);

// "0.5", "2", "1.25": a number of CPUs, 0.01 to 1024.
base::result<double> parse_cpus(std::string_view text);

// A whole number from `min` to `max`.
base::result<std::uint64_t> parse_count(std::string_view text, std::uint64_t min, std::uint64_t max);

// "1.5 GiB", "64 MiB", "900 KiB", "12 B": for messages.
std::string format_size(std::uint64_t bytes);
// "1h30m", "90s", "250ms": for messages.
std::string format_duration(std::chrono::milliseconds d);

}  // namespace airlock::policy
