#pragma once
// Holds the current snapshot. Readers take a reference once per connection or query,
// without a lock (core/published.hpp); a reload compiles a new snapshot first and swaps it
// in whole, or keeps the old one.
#include "core/published.hpp"
#include "policy/session_table.hpp"
#include "policy/snapshot.hpp"

#include <atomic>
#include <memory>

namespace airlock::policy {

class store {
 public:
  explicit store(std::shared_ptr<const snapshot> initial) : current_(std::move(initial)) {}

  std::shared_ptr<const snapshot> current() const noexcept { return current_.load(); }
  void publish(std::shared_ptr<const snapshot> next) noexcept { current_.store(std::move(next)); }

  // Sessions registered at run time; null until the first registration.
  std::shared_ptr<const session_table> registered() const noexcept { return registered_.load(); }
  void publish(std::shared_ptr<const session_table> next) noexcept { registered_.store(std::move(next)); }

 private:
  core::published<snapshot> current_;
  core::published<session_table> registered_;
};

}  // namespace airlock::policy
