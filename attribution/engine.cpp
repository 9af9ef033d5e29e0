#include "attribution/engine.hpp"

#include <fcntl.h>
#include <sched.h>
#include <sys/stat.h>

#include <algorithm>

namespace airlock::attribution {
namespace {

std::optional<proc::ns_id> identity(const struct stat& st) {
  return proc::ns_id{static_cast<std::uint64_t>(st.st_dev), static_cast<std::uint64_t>(st.st_ino)};
}

std::optional<proc::ns_id> stat_id(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  return identity(st);
}

}  // namespace

engine::engine(engine_options options)
    : options_(std::move(options)),
      scanner_(options_.proc_root),
      // Always the real /proc: this is about the thread, not about the processes scanned.
      home_(::open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC)) {
  struct stat st {};
  if (home_ && ::fstat(home_.get(), &st) == 0) home_id_ = identity(st);
}

engine::netns_entry* engine::open(const std::string& path) {
  const auto now = stat_id(path);
  auto it = namespaces_.find(path);
  if (it != namespaces_.end() && (!now || it->second.id != *now)) {
    namespaces_.erase(it);  // deleted, or the name was reused for a new namespace
    it = namespaces_.end();
  }
  if (!now) return nullptr;
  if (it != namespaces_.end()) {
    it->second.last_used = ++uses_;
    return &it->second;
  }

  base::unique_fd ns(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  struct stat st {};
  if (!ns || ::fstat(ns.get(), &st) != 0) return nullptr;
  const proc::ns_id id = *identity(st);
  std::unique_ptr<diag_socket> diag;
  if (home_id_ && id == *home_id_) {
    diag = std::make_unique<diag_socket>();  // already there: no setns, no privilege needed
  } else {
    // setns needs CAP_SYS_ADMIN and fails with EINVAL for anything but a network namespace.
    if (!home_ || ::setns(ns.get(), CLONE_NEWNET) != 0) return nullptr;
    diag = std::make_unique<diag_socket>();
    // Back home, so nothing else this thread does happens in the sandbox's namespace. If even
    // that fails the thread stays there, which is harmless (it only talks netlink, and those
    // sockets are bound to their namespaces) as long as it no longer assumes where it is.
    if (::setns(home_.get(), CLONE_NEWNET) != 0) home_id_.reset();
  }
  if (!diag->valid()) return nullptr;

  if (namespaces_.size() >= options_.max_namespaces && !namespaces_.empty()) {
    namespaces_.erase(std::min_element(namespaces_.begin(), namespaces_.end(), [](const auto& a, const auto& b) {
      return a.second.last_used < b.second.last_used;
    }));
  }
  auto& entry = namespaces_[path];
  entry = netns_entry{id, std::move(diag), ++uses_};
  return &entry;
}

lookup_result engine::lookup(const std::string& netns_path, const socket_key& key) {
  netns_entry* ns = open(netns_path);
  if (!ns) return unknown_result(cause::netns_not_available);
  const diag_answer answer = ns->diag->find(key);
  switch (answer.what) {
    case diag_answer::kind::not_found: return unknown_result(cause::socket_not_found);
    case diag_answer::kind::failed: return unknown_result(cause::lookup_failed);
    case diag_answer::kind::found: break;
  }
  if (answer.inode == 0) return unknown_result(cause::socket_closed);
  const auto owner = scanner_.socket_owner(answer.inode, ns->id);
  if (!owner) return unknown_result(cause::process_exited);
  lookup_result out;
  out.chain = scanner_.parent_chain(*owner, ns->id);
  if (out.chain.empty()) out.unknown = cause::process_exited;
  return out;
}

void engine::forget(const std::string& netns_path) {
  if (auto it = namespaces_.find(netns_path); it != namespaces_.end()) namespaces_.erase(it);
}

void engine::sweep() {
  std::erase_if(namespaces_, [](const auto& entry) { return stat_id(entry.first) != entry.second.id; });
}

}  // namespace airlock::attribution
