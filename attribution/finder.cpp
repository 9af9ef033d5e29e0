#include "attribution/finder.hpp"

#include "attribution/engine.hpp"

#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>

#include <atomic>
#include <memory>
#include <optional>

namespace airlock::attribution {

namespace asio = boost::asio;

finder::finder(finder_options options) : options_(std::move(options)), worker_([this] { run(); }) {}

finder::~finder() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_one();
  worker_.join();
}

void finder::lookup(std::string netns_path, const socket_key& key, completion done, still_wanted wanted) {
  bool stopping = false;
  {
    std::lock_guard lock(mutex_);
    stopping = stopping_;
    if (!stopping && queue_.size() < options_.queue_capacity) {
      queue_.push_back(request{std::move(netns_path), key, std::move(done), std::move(wanted)});
      wake_.notify_one();
      return;
    }
  }
  done(unknown_result(stopping ? cause::shutting_down : cause::queue_full));
}

void finder::forget(std::string netns_path) {
  std::lock_guard lock(mutex_);
  // Not bounded by the queue's capacity: dropping it would keep a namespace alive.
  queue_.push_back(request{std::move(netns_path), {}, {}, {}});
  wake_.notify_one();
}

void finder::run() {
  engine lookups(engine_options{options_.proc_root, options_.max_namespaces});
  auto last_sweep = std::chrono::steady_clock::now();
  std::unique_lock lock(mutex_);
  for (;;) {
    // Namespaces that are gone are let go of every sweep_interval, busy or not: a kept
    // socket holds its namespace alive.
    if (std::chrono::steady_clock::now() - last_sweep >= options_.sweep_interval) {
      lock.unlock();
      lookups.sweep();
      last_sweep = std::chrono::steady_clock::now();
      lock.lock();
    }
    if (queue_.empty() && !stopping_) {
      wake_.wait_until(lock, last_sweep + options_.sweep_interval, [this] { return !queue_.empty() || stopping_; });
      continue;
    }
    if (queue_.empty()) return;  // stopping, nothing left
    request r = std::move(queue_.front());
    queue_.pop_front();
    const bool stopping = stopping_;
    lock.unlock();
    if (!r.done) {
      lookups.forget(r.netns_path);
    } else if (stopping) {
      r.done(unknown_result(cause::shutting_down));
    } else if (r.wanted && !r.wanted()) {
      r.done(unknown_result(cause::timed_out));
    } else {
      r.done(lookups.lookup(r.netns_path, r.key));
    }
    lock.lock();
  }
}

namespace {

// One async_lookup in flight. The worker's result and a cancellation race to complete it;
// whichever comes first takes the handler, the other finds it gone.
class async_op : public std::enable_shared_from_this<async_op> {
 public:
  using handler_type = asio::any_completion_handler<void(lookup_result)>;

  async_op(asio::any_io_executor executor, handler_type handler)
      : handler_(std::move(handler)), work_(std::move(executor)) {}

  // Called on the caller's thread, before the request is queued.
  void arm_cancellation() {
    auto slot = asio::get_associated_cancellation_slot(handler_);
    if (!slot.is_connected()) return;
    slot.assign([weak = weak_from_this()](asio::cancellation_type type) {
      if (type == asio::cancellation_type::none) return;
      if (auto self = weak.lock()) self->complete(unknown_result(cause::timed_out));
    });
  }

  bool finished() const noexcept { return finished_.load(); }

  // Any thread. The handler runs later, on its own executor, never inside this call.
  void complete(lookup_result result) {
    std::optional<handler_type> handler;
    std::optional<asio::executor_work_guard<asio::any_io_executor>> work;
    {
      std::lock_guard lock(mutex_);
      if (finished_.exchange(true)) return;
      handler.emplace(std::move(handler_));
      work.emplace(std::move(*work_));
      work_.reset();
    }
    const auto executor = work->get_executor();
    asio::post(executor, [h = std::move(*handler), w = std::move(*work), r = std::move(result)]() mutable {
      // The slot's function refers to this operation; it must not outlive the completion.
      asio::get_associated_cancellation_slot(h).clear();
      std::move(h)(std::move(r));
    });
  }

 private:
  std::mutex mutex_;
  std::atomic<bool> finished_{false};
  handler_type handler_;
  // Outstanding work: the caller's io_context does not run out of work while we look.
  std::optional<asio::executor_work_guard<asio::any_io_executor>> work_;
};

}  // namespace

void finder::start_async(asio::any_io_executor executor, asio::any_completion_handler<void(lookup_result)> handler,
                         std::string netns_path, const socket_key& key) {
  auto op = std::make_shared<async_op>(std::move(executor), std::move(handler));
  op->arm_cancellation();
  lookup(
      std::move(netns_path), key, [op](lookup_result r) { op->complete(std::move(r)); },
      [op] { return !op->finished(); });
}

}  // namespace airlock::attribution
