#pragma once
// A way to end a connection from another thread: whoever let the connection through keeps
// the switch (weakly) and pulls it when that permission ends; the connection's loop is told
// and ends it. Pulled before the connection armed it, it ends at arm().
//
// pull() may come from any thread; arm() and disarm() from the connection's loop only,
// and the callback runs there (posted), never inside pull(). The callback's target is read
// on that loop alone, so a connection that ended (disarm) before the post ran is not
// touched.
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/post.hpp>

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>

namespace airlock::base {

class cut_switch : public std::enable_shared_from_this<cut_switch> {
 public:
  using callback = void (*)(void* target);

  bool pulled() const noexcept { return pulled_.load(std::memory_order_acquire); }

  // Ends the connection (once; later pulls do nothing).
  void pull() {
    if (pulled_.exchange(true, std::memory_order_acq_rel)) return;
    std::optional<boost::asio::any_io_executor> loop;
    {
      std::lock_guard lock(mutex_);
      loop = loop_;
    }
    if (loop) boost::asio::post(*loop, [self = shared_from_this()] { self->fire(); });
  }

  // On the connection's loop: `fn(target)` runs there when the switch is pulled (posted
  // at once when it was pulled already).
  void arm(const boost::asio::any_io_executor& loop, callback fn, void* target) {
    fn_ = fn;
    target_ = target;
    {
      std::lock_guard lock(mutex_);
      loop_ = loop;
    }
    if (pulled()) boost::asio::post(loop, [self = shared_from_this()] { self->fire(); });
  }
  // On the same loop: the connection is over; a pull from now on touches nothing.
  void disarm() noexcept { target_ = nullptr; }

 private:
  void fire() {
    if (auto* t = std::exchange(target_, nullptr)) fn_(t);
  }

  std::atomic<bool> pulled_{false};
  std::mutex mutex_;  // guards loop_ (pull reads it from any thread)
  std::optional<boost::asio::any_io_executor> loop_;
  callback fn_ = nullptr;   // the loop's only
  void* target_ = nullptr;  // the loop's only
};

}  // namespace airlock::base
