// Parsers for the two /proc files attribution reads: sans-I/O, pure, never throw.
//
// Both files are written by the kernel but their text comes from the sandbox: a process
// chooses its own comm (prctl PR_SET_NAME) and argv, so comm may hold spaces, ')' and
// control bytes, and cmdline may hold anything. The parsers make both printable, bounded
// text; the JSON encoder above them never sees a raw control byte.
#pragma once

#include <boost/system/result.hpp>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace airlock::attribution::proc {

// At most this many bytes of argv text are kept (docs/decision-log.md, "process").
inline constexpr std::size_t max_cmdline = 256;
// comm is 16 bytes in the kernel (64 for some kernel threads); escaped it stays below this.
inline constexpr std::size_t max_comm = 64;

struct stat_fields {
  std::int32_t pid = 0;
  std::string comm;  // printable (see printable()), without the parentheses
  char state = '?';  // R, S, D, Z, ...
  std::int32_t ppid = 0;
  std::uint64_t start_time = 0;  // clock ticks after boot: with pid, identifies one process
};

enum class stat_error {
  no_comm,    // no "(...)" after the pid
  bad_field,  // pid, state, ppid or start time missing or not a number
};

// Parses /proc/PID/stat: "pid (comm) state ppid ... starttime ...". comm is everything between
// the first '(' and the LAST ')', since the process chooses it and may put ") " inside.
boost::system::result<stat_fields, stat_error> parse_stat(std::span<const std::byte> bytes) noexcept;

// Turns /proc/PID/cmdline (argv, each argument NUL-terminated) into one line: trailing NULs
// dropped, the other NULs become spaces, the rest goes through printable(). At most `cap` bytes;
// a cut line ends in "...". A kernel thread or a zombie gives "".
std::string parse_cmdline(std::span<const std::byte> bytes, std::size_t cap = max_cmdline);

// `raw` with every byte outside 0x20..0x7e written as \xHH and '\' as "\\", so the text is
// printable ASCII and lossless. At most `cap` bytes (cap >= 3): a cut text ends in "...",
// and an escape is never split.
std::string printable(std::string_view raw, std::size_t cap);

}  // namespace airlock::attribution::proc
