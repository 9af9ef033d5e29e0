#pragma once
// Holds the current snapshot. Readers take a reference once per connection or query;
// a reload compiles a new snapshot first and swaps it in whole, or keeps the old one.
#include "policy/session_table.hpp"
#include "policy/snapshot.hpp"

#include <atomic>
#include <memory>

namespace airlock::policy {

class store {
 public:
  explicit store(std::shared_ptr<const snapshot> initial) : current_(std::move(initial)) {}

  std::shared_ptr<const snapshot> current() const noexcept { return current_.load(std::memory_order_acquire); }
  void publish(std::shared_ptr<const snapshot> next) noexcept { current_.store(std::move(next), std::memory_order_release); }

  // Sessions registered at run time; null until the first registration.
  std::shared_ptr<const session_table> registered() const noexcept { return registered_.load(std::memory_order_acquire); }
  void publish(std::shared_ptr<const session_table> next) noexcept {
    registered_.store(std::move(next), std::memory_order_release);
  }

 private:
  std::atomic<std::shared_ptr<const snapshot>> current_;
  std::atomic<std::shared_ptr<const session_table>> registered_;
};

}  // namespace airlock::policy
