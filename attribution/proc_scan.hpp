// Which process holds a socket, and its parents: reads /proc (or a test's stand-in for it).
//
// The sandbox's processes are found by their network namespace: only processes whose
// /proc/PID/ns/net is the sandbox's namespace are searched, so a scan reads a few dozen fd
// tables, not the host's. Everything here is racy by nature (processes come and go while
// /proc is read) and so best effort: a process that vanishes mid-read is skipped.
#pragma once

#include "attribution/result.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace airlock::attribution::proc {

// A namespace's identity: the nsfs inode (and device) behind /proc/PID/ns/net or /run/netns/NAME.
struct ns_id {
  std::uint64_t dev = 0;
  std::uint64_t ino = 0;
  friend bool operator==(const ns_id&, const ns_id&) = default;
};

class scanner {
 public:
  explicit scanner(std::string proc_root = "/proc") : root_(std::move(proc_root)) {}

  // The network namespace of `pid`; nullopt when it exited or cannot be read.
  std::optional<ns_id> netns_of(int pid) const;

  // The process in namespace `ns` whose fd table holds socket:[inode]. When several do (a
  // socket inherited across fork), the most recently started one, which is usually the one
  // using it. nullopt when none does.
  std::optional<int> socket_owner(std::uint64_t inode, const ns_id& ns) const;

  // `pid` and its parents, up to max_chain, stopping before pid 1 and before the first process
  // outside `ns`. Empty when `pid` itself cannot be read or is outside `ns`.
  std::vector<process_info> parent_chain(int pid, const ns_id& ns) const;

 private:
  std::string path(int pid, const char* file) const;
  std::string root_;
};

}  // namespace airlock::attribution::proc
