#pragma once
// The deadlines of one event loop, kept without a timer each: the relay's idle limits and
// the data path's waits on a peer (the first bytes, a connect).
//
// An Asio service, so it lives and dies with its loop, which runs on one thread (no
// locks). Entries are kept in lists by limit, each list in deadline order (an entry is
// added or touched at the back, and now + limit is never earlier than a deadline already in
// that list), and one timer waits for the earliest head. An entry costs two pointers and a
// deadline, where a timer of its own and the wait on it cost about 260 bytes and, on every
// new earliest deadline, a timerfd_settime; and racing an operation against a timer with
// awaitable_operators (base/deadline.hpp) costs two co_spawned coroutines and a parallel
// group per wait.
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/execution_context.hpp>
#include <boost/asio/query.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <memory>
#include <optional>
#include <vector>

namespace airlock::base {

class deadline_watch final : public boost::asio::execution_context::service {
 private:
  struct lane;

 public:
  using clock = std::chrono::steady_clock;

  // What a watched object carries (its base class: the names say whose they are).
  struct entry {
    entry* watch_prev = nullptr;
    entry* watch_next = nullptr;
    lane* watch_lane = nullptr;  // null: not watched
    clock::time_point watch_deadline{};
    // Its deadline passed; it is no longer watched. Called while the lanes are walked: it
    // must not watch() anything itself (cancelling or closing an Asio object only posts).
    void (*on_due)(entry&) = nullptr;
  };

  static inline boost::asio::execution_context::id id;
  explicit deadline_watch(boost::asio::execution_context& ctx) : service(ctx) {}

  // The watch of the loop that runs `ex`.
  template <typename Executor>
  static deadline_watch& of(const Executor& ex) {
    return boost::asio::use_service<deadline_watch>(boost::asio::query(ex, boost::asio::execution::context));
  }

  void watch(entry& e, clock::duration limit, const boost::asio::any_io_executor& ex) {
    if (!timer_) timer_.emplace(ex);
    lane* l = nullptr;
    for (auto& x : lanes_)
      if (x->limit == limit) l = x.get();
    if (!l) {
      // Limits are few (the settings'); should a caller bring many, empty lanes go first, so
      // the lanes never outnumber the limits in use by much.
      if (lanes_.size() >= max_idle_lanes) std::erase_if(lanes_, [](const auto& x) { return !x->head; });
      l = lanes_.emplace_back(std::make_unique<lane>(limit)).get();
    }
    e.watch_lane = l;
    e.watch_deadline = clock::now() + limit;
    push_back(*l, e);
    arm();
  }
  // The deadline moves to now + limit. Never re-arms the timer: the heads' deadlines only
  // move later, and a timer that wakes early finds nothing due.
  void touch(entry& e) {
    if (!e.watch_lane) return;
    lane& l = *e.watch_lane;
    e.watch_deadline = clock::now() + l.limit;
    if (l.tail == &e) return;
    unlink(e);
    e.watch_lane = &l;
    push_back(l, e);
  }
  std::size_t lanes() const noexcept { return lanes_.size(); }

  void forget(entry& e) noexcept {
    if (!e.watch_lane) return;
    unlink(e);
    // The last entry gone: no timer wait keeps the loop's run() from returning.
    for (auto& l : lanes_)
      if (l->head) return;
    if (waiting_ && timer_) timer_->cancel();
    waiting_ = false;
  }

 private:
  struct lane {
    explicit lane(clock::duration l) : limit(l) {}
    clock::duration limit;
    entry* head = nullptr;
    entry* tail = nullptr;
  };

  static void push_back(lane& l, entry& e) noexcept {
    e.watch_prev = l.tail;
    e.watch_next = nullptr;
    (l.tail ? l.tail->watch_next : l.head) = &e;
    l.tail = &e;
  }
  static void unlink(entry& e) noexcept {
    lane& l = *e.watch_lane;
    (e.watch_prev ? e.watch_prev->watch_next : l.head) = e.watch_next;
    (e.watch_next ? e.watch_next->watch_prev : l.tail) = e.watch_prev;
    e.watch_prev = e.watch_next = nullptr;
    e.watch_lane = nullptr;
  }

  // The timer waits for the earliest head, if it is not already waiting for earlier.
  void arm() {
    std::optional<clock::time_point> earliest;
    for (auto& l : lanes_)
      if (l->head && (!earliest || l->head->watch_deadline < *earliest)) earliest = l->head->watch_deadline;
    if (!earliest || !timer_ || (waiting_ && timer_->expiry() <= *earliest)) return;
    timer_->expires_at(*earliest);  // a pending wait completes as aborted, and is replaced
    waiting_ = true;
    timer_->async_wait([this](boost::system::error_code ec) {
      if (ec != boost::asio::error::operation_aborted) fire();
    });
  }
  void fire() {
    waiting_ = false;
    const auto now = clock::now();
    for (auto& l : lanes_) {
      while (l->head && l->head->watch_deadline <= now) {
        entry& e = *l->head;
        unlink(e);
        e.on_due(e);
      }
    }
    arm();
  }

  // The loop is being torn down: nothing is watched any more, and the timer goes while
  // the services it needs are still there.
  void shutdown() override {
    for (auto& l : lanes_)
      while (l->head) unlink(*l->head);
    lanes_.clear();
    timer_.reset();
  }

  static constexpr std::size_t max_idle_lanes = 8;
  std::vector<std::unique_ptr<lane>> lanes_;  // one per limit in use: few
  std::optional<boost::asio::steady_timer> timer_;
  bool waiting_ = false;
};

// A limit on the waits of one scope: if `limit` passes before the guard goes, `io`'s
// pending operations are cancelled (a socket's complete with operation_aborted), or the
// object is closed (for async_connect over several endpoints, which a cancel would only
// move on to the next one). passed() tells the two outcomes apart:
//   const cancel_after deadline(socket, 5s);
//   auto [ec, n] = co_await socket.async_read_some(buf, nothrow);
//   if (deadline.passed()) ...
enum class when_due { cancel, close };

template <typename IoObject>
class cancel_after : private deadline_watch::entry {
 public:
  cancel_after(IoObject& io, std::chrono::steady_clock::duration limit, when_due what = when_due::cancel)
      : io_(io), watch_(deadline_watch::of(io.get_executor())), what_(what) {
    on_due = [](deadline_watch::entry& e) { static_cast<cancel_after&>(e).due(); };
    watch_.watch(*this, limit, io.get_executor());
  }
  cancel_after(const cancel_after&) = delete;
  cancel_after& operator=(const cancel_after&) = delete;
  ~cancel_after() { watch_.forget(*this); }

  bool passed() const noexcept { return passed_; }

 private:
  void due() {
    passed_ = true;
    boost::system::error_code ignored;
    if (what_ == when_due::close) io_.close(ignored);
    else io_.cancel(ignored);
  }

  IoObject& io_;
  deadline_watch& watch_;
  when_due what_;
  bool passed_ = false;
};

// A cancel_after watched only from the first wait (arm(), called before each wait; the
// first call starts the watch): a wait that often never happens (a first message already
// queued at the accept, a connect to a local link established at once) would otherwise
// cost an idle loop a timer re-arm and a cancelled wait's handler for a deadline set and
// dropped. The limit counts from the first wait, microseconds after the scope began.
template <typename IoObject>
class cancel_after_first_wait {
 public:
  cancel_after_first_wait(IoObject& io, std::chrono::steady_clock::duration limit, when_due what = when_due::cancel)
      : io_(io), limit_(limit), what_(what) {}

  void arm() {
    if (!watch_) watch_.emplace(io_, limit_, what_);
  }
  bool passed() const noexcept { return watch_ && watch_->passed(); }

 private:
  IoObject& io_;
  std::chrono::steady_clock::duration limit_;
  when_due what_;
  std::optional<cancel_after<IoObject>> watch_;
};

}  // namespace airlock::base
