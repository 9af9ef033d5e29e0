#pragma once
// Holds the current snapshot. Readers take a reference once per connection or query,
// without a lock (base/published.hpp); a reload compiles a new snapshot first and swaps it
// in whole, or keeps the old one. Beside it: the sessions registered at run time, and
// airlock's own addresses (the host's, the listeners', the registered sandboxes'), rebuilt
// whenever the host's addresses or the registrations change.
#include "base/published.hpp"
#include "policy/own_addresses.hpp"
#include "policy/session_table.hpp"
#include "policy/snapshot.hpp"

#include <atomic>
#include <memory>
#include <mutex>
#include <vector>

namespace airlock::policy {

class store {
 public:
  explicit store(std::shared_ptr<const snapshot> initial) : current_(std::move(initial)) {}

  std::shared_ptr<const snapshot> current() const noexcept { return current_.load(); }
  void publish(std::shared_ptr<const snapshot> next) noexcept { current_.store(std::move(next)); }

  // Sessions registered at run time; null until the first registration.
  std::shared_ptr<const session_table> registered() const noexcept { return registered_.load(); }
  void publish(std::shared_ptr<const session_table> next) {
    std::lock_guard lock(own_mutex_);
    registered_.store(next);
    sandboxes_.clear();
    if (next)
      for (const auto& s : next->sessions()) sandboxes_.insert(sandboxes_.end(), s.sources.begin(), s.sources.end());
    publish_own();
  }

  // airlock's own addresses; null until the host's were first read.
  std::shared_ptr<const own_addresses> own() const noexcept { return own_.load(); }
  // The host's interface and listener addresses, as read now (daemon/host_addresses.hpp).
  void publish_host_addresses(std::vector<cidr> host) {
    std::lock_guard lock(own_mutex_);
    host_ = std::move(host);
    publish_own();
  }

 private:
  void publish_own() {
    std::vector<cidr> all = host_;
    all.insert(all.end(), sandboxes_.begin(), sandboxes_.end());
    own_.store(std::make_shared<const own_addresses>(std::move(all)));
  }

  base::published<snapshot> current_;
  base::published<session_table> registered_;
  base::published<own_addresses> own_;
  std::mutex own_mutex_;  // writers only (the main loop, the control API): rare
  std::vector<cidr> host_;
  std::vector<cidr> sandboxes_;
};

}  // namespace airlock::policy
