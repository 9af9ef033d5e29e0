#include "proxy/relay.hpp"

#include <boost/asio/async_result.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <array>
#include <cerrno>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

namespace airlock::proxy {
namespace {

namespace asio = boost::asio;
using asio::ip::tcp;
using clock = std::chrono::steady_clock;

constexpr std::size_t chunk = 64 * 1024;  // one pipe's default capacity
constexpr std::size_t copy_chunk = 16 * 1024;

// A pipe for splice, kept in a per-thread pool between uses: connections hold one only
// while bytes are in it, and it goes back empty.
struct pipe_pair {
  int read = -1;
  int write = -1;
  ~pipe_pair() {
    if (read >= 0) ::close(read);
    if (write >= 0) ::close(write);
  }
};

class pipe_pool {
 public:
  std::unique_ptr<pipe_pair> take() {
    if (!idle_.empty()) {
      auto p = std::move(idle_.back());
      idle_.pop_back();
      return p;
    }
    int fds[2];
    if (::pipe2(fds, O_NONBLOCK | O_CLOEXEC) != 0) return nullptr;  // out of fds: fall back to copying
    auto p = std::make_unique<pipe_pair>();
    p->read = fds[0];
    p->write = fds[1];
    return p;
  }
  void give_back(std::unique_ptr<pipe_pair> p) {
    if (idle_.size() < max_idle) idle_.push_back(std::move(p));
  }

 private:
  static constexpr std::size_t max_idle = 64;
  std::vector<std::unique_ptr<pipe_pair>> idle_;
};

pipe_pool& pipes() {
  thread_local pipe_pool pool;
  return pool;
}

void reset_both(tcp::socket& a, tcp::socket& b) {
  boost::system::error_code ignored;
  a.shutdown(tcp::socket::shutdown_both, ignored);
  b.shutdown(tcp::socket::shutdown_both, ignored);
}

bool would_block() noexcept { return errno == EAGAIN || errno == EWOULDBLOCK; }

// The idle watchdog of every relay on one event loop: an Asio service, so it lives and
// dies with the loop (which runs on one thread: no locks). Relays are kept in lists by
// idle limit, each list in deadline order (a step moves its relay to the back, and now +
// limit is never earlier than a deadline already in that list), and one timer waits for
// the earliest head. A relay costs two pointers and a deadline here, where a timer of its
// own and the wait on it cost about 260 bytes per connection.
class idle_watch final : public asio::execution_context::service {
 private:
  struct lane;

 public:
  // What a watched relay carries (its base class: the names say whose they are).
  struct entry {
    entry* idle_prev = nullptr;
    entry* idle_next = nullptr;
    lane* idle_lane = nullptr;  // null: not watched
    clock::time_point idle_deadline{};
    void (*on_idle)(entry&) = nullptr;  // its deadline passed; it is no longer watched
  };

  static inline asio::execution_context::id id;
  explicit idle_watch(asio::execution_context& ctx) : service(ctx) {}

  void watch(entry& e, clock::duration limit, const asio::any_io_executor& ex) {
    if (!timer_) timer_.emplace(ex);
    lane* l = nullptr;
    for (auto& x : lanes_)
      if (x->limit == limit) l = x.get();
    if (!l) l = lanes_.emplace_back(std::make_unique<lane>(limit)).get();
    e.idle_lane = l;
    e.idle_deadline = clock::now() + limit;
    push_back(*l, e);
    arm();
  }
  // Something moved: the deadline is pushed back. Never re-arms the timer: the heads'
  // deadlines only move later, and a timer that wakes early finds nothing due.
  void touch(entry& e) {
    if (!e.idle_lane) return;
    lane& l = *e.idle_lane;
    e.idle_deadline = clock::now() + l.limit;
    if (l.tail == &e) return;
    unlink(e);
    e.idle_lane = &l;
    push_back(l, e);
  }
  void forget(entry& e) noexcept {
    if (!e.idle_lane) return;
    unlink(e);
    // The last relay gone: no timer wait keeps the loop's run() from returning.
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
    e.idle_prev = l.tail;
    e.idle_next = nullptr;
    (l.tail ? l.tail->idle_next : l.head) = &e;
    l.tail = &e;
  }
  static void unlink(entry& e) noexcept {
    lane& l = *e.idle_lane;
    (e.idle_prev ? e.idle_prev->idle_next : l.head) = e.idle_next;
    (e.idle_next ? e.idle_next->idle_prev : l.tail) = e.idle_prev;
    e.idle_prev = e.idle_next = nullptr;
    e.idle_lane = nullptr;
  }

  // The timer waits for the earliest head, if it is not already waiting for earlier.
  void arm() {
    std::optional<clock::time_point> earliest;
    for (auto& l : lanes_)
      if (l->head && (!earliest || l->head->idle_deadline < *earliest)) earliest = l->head->idle_deadline;
    if (!earliest || !timer_ || (waiting_ && timer_->expiry() <= *earliest)) return;
    timer_->expires_at(*earliest);  // a pending wait completes as aborted, and is replaced
    waiting_ = true;
    timer_->async_wait([this](boost::system::error_code ec) {
      if (ec != asio::error::operation_aborted) fire();
    });
  }
  void fire() {
    waiting_ = false;
    const auto now = clock::now();
    for (auto& l : lanes_) {
      while (l->head && l->head->idle_deadline <= now) {
        entry& e = *l->head;
        unlink(e);
        e.on_idle(e);
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

  std::vector<std::unique_ptr<lane>> lanes_;  // one per idle limit in use: few
  std::optional<asio::steady_timer> timer_;
  bool waiting_ = false;
};

// One relayed connection. Plain completion handlers drive it, not coroutines: an idle
// connection is then this object, two pending waits (either socket readable) and its
// place in the loop's idle_watch, where a coroutine per direction and a watchdog joined
// with && and || cost three coroutine frames, four co_spawned threads and two parallel
// groups (proxy/README.md, "Memory per idle connection").
//
// Each direction repeats: wait until `from` is readable; move what is there (socket ->
// pipe -> socket with splice, or through a buffer where splice is refused), waiting for
// `to` to take it; push the idle deadline forward; tell the meter. EOF is passed on as a
// half-close (the other direction goes on); a failure resets both ways.
//
// Lifetime: every pending wait holds the object (`hold`). When the last hold goes after
// its handler ran, nothing is left to wait for: the relay is over, the object is freed
// and the awaiting coroutine resumes with the totals. When the last hold goes unrun (the
// loop is torn down with the wait pending), the object is freed with the awaiting
// coroutine's handler, so that coroutine unwinds (and logs its line) like any other.
template <typename Handler>
class relay_op : private idle_watch::entry {
 public:
  relay_op(Handler handler, tcp::socket& client, tcp::socket& upstream, clock::duration idle_limit,
           relay_meter* meter)
      : handler_(std::move(handler)),
        watch_(asio::use_service<idle_watch>(asio::query(client.get_executor(), asio::execution::context))),
        idle_limit_(idle_limit),
        meter_(meter),
        ways_{way{client, upstream, true}, way{upstream, client, false}} {}

  relay_op(const relay_op&) = delete;
  relay_op& operator=(const relay_op&) = delete;
  ~relay_op() { watch_.forget(*this); }

  void start() {
    boost::system::error_code ec;
    // splice and the direct reads need sockets that never block the loop.
    ways_[0].from.native_non_blocking(true, ec);
    if (!ec) ways_[1].from.native_non_blocking(true, ec);
    if (ec) {
      reset_both(ways_[0].from, ways_[1].from);
      ways_[0].done = ways_[1].done = true;
      asio::post(ways_[0].from.get_executor(), [h = hold(this)]() mutable { h.ran(); });  // completes once posted
      return;
    }
    on_idle = [](idle_watch::entry& e) { static_cast<relay_op&>(e).timed_out(); };
    watch_.watch(*this, idle_limit_, ways_[0].from.get_executor());
    wait_readable(0);
    wait_readable(1);
  }

 private:
  struct way {
    way(tcp::socket& f, tcp::socket& t, bool u) : from(f), to(t), up(u) {}
    tcp::socket& from;
    tcp::socket& to;
    bool up;
    bool done = false;
    bool use_splice = true;
    std::size_t pending = 0;  // read from `from`, not yet written to `to`
    std::size_t moved = 0;    // this step's bytes
    std::unique_ptr<pipe_pair> pipe;                          // only while bytes are in it
    std::unique_ptr<std::array<std::byte, copy_chunk>> buffer;  // the same, where splice is refused
  };

  class hold {
   public:
    explicit hold(relay_op* op) noexcept : op_(op) { ++op_->holds_; }
    hold(hold&& other) noexcept : op_(std::exchange(other.op_, nullptr)), ran_(other.ran_) {}
    hold& operator=(hold&&) = delete;
    ~hold() {
      if (op_) op_->release(ran_);
    }
    relay_op* ran() noexcept {
      ran_ = true;
      return op_;
    }

   private:
    relay_op* op_;
    bool ran_ = false;
  };

  void release(bool ran) {
    if (--holds_ > 0) return;
    if (!ran) {
      delete this;  // torn down unrun: the awaiting coroutine goes with its handler
      return;
    }
    auto handler = std::move(handler_);
    const auto totals = totals_;
    delete this;
    std::move(handler)(totals);  // on the loop already: resume the awaiting coroutine here
  }

  void wait_readable(std::size_t i) {
    ways_[i].from.async_wait(tcp::socket::wait_read, [h = hold(this), i](boost::system::error_code ec) mutable {
      h.ran()->readable(i, ec);
    });
  }
  void wait_writable(std::size_t i) {
    ways_[i].to.async_wait(tcp::socket::wait_write, [h = hold(this), i](boost::system::error_code ec) mutable {
      h.ran()->writable(i, ec);
    });
  }

  // Nothing moved either way for the idle limit (idle_watch calls this once).
  void timed_out() {
    if (over()) return;
    totals_.idle_timeout = true;
    end_both();
  }

  void readable(std::size_t i, boost::system::error_code ec) {
    way& w = ways_[i];
    if (w.done) return;
    if (ec) return failed(w);  // cancelled, or the socket went bad
    if (w.use_splice && !w.pipe) w.pipe = pipes().take();
    if (w.use_splice && w.pipe) {
      const auto in = ::splice(w.from.native_handle(), nullptr, w.pipe->write, nullptr, chunk,
                               SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
      if (in == 0) return eof(w);
      if (in < 0) {
        if (errno == EINVAL) {
          w.use_splice = false;  // this socket pair cannot splice; nothing was moved yet
          pipes().give_back(std::move(w.pipe));
          return stepped(i);
        }
        if (would_block() || errno == EINTR) {
          pipes().give_back(std::move(w.pipe));
          return stepped(i);
        }
        return failed(w);
      }
      w.pending = w.moved = static_cast<std::size_t>(in);
      return flush(i);
    }
    // Through a buffer: where splice is refused, or no pipe could be had.
    w.buffer = std::make_unique<std::array<std::byte, copy_chunk>>();
    const auto n = ::recv(w.from.native_handle(), w.buffer->data(), w.buffer->size(), MSG_DONTWAIT);
    if (n == 0) return eof(w);
    if (n < 0) {
      w.buffer.reset();
      if (would_block() || errno == EINTR) return stepped(i);
      return failed(w);
    }
    w.pending = w.moved = static_cast<std::size_t>(n);
    flush(i);
  }

  void writable(std::size_t i, boost::system::error_code ec) {
    way& w = ways_[i];
    if (w.done) return;
    if (ec) return failed(w);
    flush(i);
  }

  // Writes what this step read, waiting for `to` as often as it needs.
  void flush(std::size_t i) {
    way& w = ways_[i];
    while (w.pending > 0) {
      const auto offset = w.moved - w.pending;
      const auto out = w.pipe ? ::splice(w.pipe->read, nullptr, w.to.native_handle(), nullptr, w.pending,
                                         SPLICE_F_MOVE | SPLICE_F_NONBLOCK)
                              : ::send(w.to.native_handle(), w.buffer->data() + offset, w.pending,
                                       MSG_DONTWAIT | MSG_NOSIGNAL);
      if (out > 0) {
        w.pending -= static_cast<std::size_t>(out);
        continue;
      }
      if (out < 0 && errno == EINTR) continue;
      if (out < 0 && !would_block()) return failed(w);
      return wait_writable(i);
    }
    if (w.pipe) pipes().give_back(std::move(w.pipe));  // empty: every byte that went in came out
    w.buffer.reset();
    stepped(i);
  }

  // A step is done (maybe with nothing moved): count, push the deadline, ask the meter.
  void stepped(std::size_t i) {
    way& w = ways_[i];
    const auto moved = std::exchange(w.moved, 0);
    (w.up ? totals_.up : totals_.down) += moved;
    watch_.touch(*this);
    if (moved && meter_ && !meter_->moved(w.up, moved)) {
      totals_.cut = true;
      return failed(w);
    }
    wait_readable(i);
  }

  void eof(way& w) {
    boost::system::error_code ignored;
    w.to.shutdown(tcp::socket::shutdown_send, ignored);  // pass the half-close on
    finish(w);
  }
  // A reset, a failure or a cut: the other direction has nothing left to say either (its
  // wait wakes to the shutdown and ends it).
  void failed(way& w) {
    reset_both(w.from, w.to);
    finish(w);
  }
  void finish(way& w) {
    w.done = true;
    w.pipe.reset();  // may hold bytes that will never be written: closed, not pooled
    w.buffer.reset();
    if (over()) watch_.forget(*this);
  }
  bool over() const noexcept { return ways_[0].done && ways_[1].done; }

  // The idle watchdog ends both ways at once.
  void end_both() {
    for (auto& w : ways_) {
      w.done = true;
      w.pipe.reset();
      w.buffer.reset();
    }
    reset_both(ways_[0].from, ways_[1].from);
    boost::system::error_code ignored;
    ways_[0].from.cancel(ignored);
    ways_[1].from.cancel(ignored);
  }

  Handler handler_;
  idle_watch& watch_;
  clock::duration idle_limit_;
  relay_meter* meter_;
  relay_totals totals_{};
  int holds_ = 0;
  std::array<way, 2> ways_;  // [0] client -> upstream, [1] upstream -> client
};

}  // namespace

asio::awaitable<relay_totals> relay(tcp::socket& client, tcp::socket& upstream, clock::duration idle_limit,
                                    relay_meter* meter) {
  return asio::async_initiate<decltype(asio::use_awaitable), void(relay_totals)>(
      [&client, &upstream, idle_limit, meter](auto handler) {
        auto* op = new relay_op<decltype(handler)>(std::move(handler), client, upstream, idle_limit, meter);
        op->start();
      },
      asio::use_awaitable);
}

}  // namespace airlock::proxy
