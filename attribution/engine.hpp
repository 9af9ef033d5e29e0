// One lookup, synchronously: namespace -> sock_diag -> inode -> owning process -> parents.
// Not thread-safe and may block (a /proc read of a process stuck in the kernel can): the
// finder runs it on its own worker thread, never on an event loop.
#pragma once

#include "attribution/diag_socket.hpp"
#include "attribution/proc_scan.hpp"
#include "attribution/result.hpp"
#include "attribution/socket_key.hpp"
#include "base/unique_fd.hpp"

#include <cstdint>
#include <map>
#include <memory>
#include <string>

namespace airlock::attribution {

struct engine_options {
  std::string proc_root = "/proc";  // a test may point this at a fake tree
  std::size_t max_namespaces = 64;  // namespaces kept open; the least recently used goes first
};

class engine {
 public:
  // Belongs to the calling thread: its network namespace is "home", where the thread returns
  // after opening a sock_diag socket in a sandbox's namespace.
  explicit engine(engine_options options = {});

  // The owning process of `key` inside the network namespace at `netns_path` (/run/netns/NAME,
  // /proc/PID/ns/net). Never throws for lookup failures: `unknown` says what went wrong.
  lookup_result lookup(const std::string& netns_path, const socket_key& key);

  // Closes what is kept open for `netns_path`. Holding a namespace's file (or a socket created
  // in it) keeps the namespace, its interfaces and routes alive after `ip netns del`.
  void forget(const std::string& netns_path);
  // Closes everything whose path is gone or now names another namespace.
  void sweep();

  std::size_t open_namespaces() const noexcept { return namespaces_.size(); }

 private:
  struct netns_entry {
    proc::ns_id id;
    std::unique_ptr<diag_socket> diag;
    std::uint64_t last_used = 0;
  };
  // The entry for `path`, opened (or reopened, when the path now names another namespace)
  // as needed; nullptr when it cannot be.
  netns_entry* open(const std::string& path);

  engine_options options_;
  proc::scanner scanner_;
  base::unique_fd home_;
  std::optional<proc::ns_id> home_id_;
  std::map<std::string, netns_entry, std::less<>> namespaces_;
  std::uint64_t uses_ = 0;
};

}  // namespace airlock::attribution
