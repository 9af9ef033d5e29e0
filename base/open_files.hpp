#pragma once
// Descriptors, the resource a proxy runs out of first: a relayed connection holds two (and,
// while it moves bulk, a pipe pair), so the soft limit many systems start a process with
// (1024) would stop airlock near 400 connections.
#include "base/unique_fd.hpp"

#include <cstdint>

namespace airlock::base {

// Raises the soft RLIMIT_NOFILE to the hard one (what a process may do by itself) and
// returns the limit now in force.
std::uint64_t raise_open_files_limit() noexcept;

// The connections that limit holds, at two descriptors each, beside `kept` for the daemon's
// own listeners, loops, log and the like.
constexpr std::uint64_t connections_within(std::uint64_t open_files, std::uint64_t kept = 64) noexcept {
  return open_files > kept ? (open_files - kept) / 2 : 0;
}

// One descriptor held back (/dev/null) so that an accept loop out of descriptors can still
// take the connections waiting in its listener's queue, one at a time, to reset them:
// otherwise they would wait there, silent, until something else closes. (The reserve
// descriptor libev's documentation describes for EMFILE, and libuv keeps.)
class spare_descriptor {
 public:
  spare_descriptor() { restore(); }
  // Gives the descriptor back to the process for one accept: false if there was none.
  bool lend() noexcept;
  // Takes one again (after the accepted connection was closed); may fail while others
  // hold every descriptor, and is tried again at the next lend.
  void restore() noexcept;

 private:
  unique_fd fd_;
};

}  // namespace airlock::base
