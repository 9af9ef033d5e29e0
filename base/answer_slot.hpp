#pragma once
// One answer for one waiter, given from any thread: a coroutine on its own loop waits for
// it until a deadline; whoever answers (another loop, the control API's thread) gives it.
// The waiter is woken on its own loop (posted), never inside give().
//
// Exactly one outcome: give() after the waiter stopped waiting (its deadline passed, or it
// was destroyed) returns false, and the waiter never sees that answer; an answer given
// before wait() began is there at once. The timer is the waiter's own (a local of wait()):
// give() reaches it only through a post to the waiter's loop, where it is also cleared.
#include "base/deadline.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>

#include <chrono>
#include <memory>
#include <mutex>
#include <optional>

namespace airlock::base {

template <typename T>
class answer_slot : public std::enable_shared_from_this<answer_slot<T>> {
 public:
  // The answer; false when the waiter no longer waits (it will not see it) or one was given.
  bool give(T value) {
    std::optional<boost::asio::any_io_executor> loop;
    {
      std::lock_guard lock(mutex_);
      if (value_ || done_) return false;
      value_ = std::move(value);
      loop = loop_;
    }
    if (loop)
      boost::asio::post(*loop, [self = this->shared_from_this()] {
        if (self->timer_ != nullptr) self->timer_->cancel();
      });
    return true;
  }

  // On the waiter's loop, once: the answer, or nullopt when `deadline` came first.
  boost::asio::awaitable<std::optional<T>> wait(std::chrono::steady_clock::time_point deadline) {
    auto ex = co_await boost::asio::this_coro::executor;
    boost::asio::steady_timer timer(ex, deadline);
    {
      std::lock_guard lock(mutex_);
      if (value_) {
        done_ = true;
        co_return std::move(value_);
      }
      loop_ = ex;
    }
    // The posted cancel runs on this loop, so it sees timer_ set or cleared, never half.
    timer_ = &timer;
    struct clear {
      answer_slot* s;
      ~clear() {
        s->timer_ = nullptr;
        std::lock_guard lock(s->mutex_);
        s->done_ = true;
      }
    } on_exit{this};
    co_await timer.async_wait(nothrow);
    std::lock_guard lock(mutex_);
    done_ = true;
    co_return std::move(value_);
  }

  bool answered() const {
    std::lock_guard lock(mutex_);
    return value_.has_value();
  }

 private:
  mutable std::mutex mutex_;
  std::optional<T> value_;
  bool done_ = false;  // the waiter stopped waiting: no answer is taken from now on
  std::optional<boost::asio::any_io_executor> loop_;
  boost::asio::steady_timer* timer_ = nullptr;  // the waiter's loop only
};

}  // namespace airlock::base
