// What a lookup found, and its JSON form for the decision log (docs/decision-log.md, "process").
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace airlock::attribution {

struct process_info {
  int pid = 0;          // as seen from the host
  std::string comm;     // printable, at most proc::max_comm bytes
  std::string cmdline;  // argv joined with spaces, printable, at most proc::max_cmdline bytes
  friend bool operator==(const process_info&, const process_info&) = default;
};

struct lookup_result {
  // The owning process first, then its parents, up to max_chain entries, all inside the
  // sandbox's network namespace. Empty exactly when `unknown` says why.
  std::vector<process_info> chain;
  std::string unknown;
};

inline constexpr std::size_t max_chain = 8;

// The short causes `unknown` takes. Stable: `airlock explain` and tests match on them.
namespace cause {
inline constexpr std::string_view netns_not_available = "netns not available";  // path gone, not a netns, no permission
inline constexpr std::string_view socket_not_found = "socket not found";        // gone before the lookup ran
inline constexpr std::string_view socket_closed = "socket closed";              // still in the kernel, no file holds it
inline constexpr std::string_view process_exited = "process exited";            // no process in the namespace holds it
inline constexpr std::string_view lookup_failed = "lookup failed";              // sock_diag refused or timed out
inline constexpr std::string_view queue_full = "queue full";                    // the finder is behind; not tried
inline constexpr std::string_view timed_out = "timed out";                      // the caller stopped waiting
inline constexpr std::string_view shutting_down = "shutting down";              // the finder was destroyed first
}  // namespace cause

inline lookup_result unknown_result(std::string_view why) { return lookup_result{{}, std::string(why)}; }

// The value of the decision line's "process" field: {"pid":..,"comm":..,"cmdline":..,"chain":[..]}
// or {"unknown":"..."}. Strings are escaped as in the rest of the line (base::json_quote).
std::string render_process_json(const lookup_result& r);

}  // namespace airlock::attribution
