#pragma once
// One relayed connection's state machine, behind proxy/relay.hpp's relay(): only relay.cpp
// makes one, with the coroutine's handler in a class of its own (relay_op knows nothing of
// the handler, so its steps live in one translation unit, relay_op.cpp).
//
// Plain completion handlers drive it, not coroutines: an idle connection is then this
// object, two pending waits (either socket readable) and its place in the loop's
// deadline_watch, where a coroutine per direction and a watchdog joined with && and || cost
// three coroutine frames, four co_spawned threads and two parallel groups (proxy/README.md,
// "Memory per idle connection").
//
// Each direction (a `way`) repeats: wait until `from` is readable; move what is there
// (through a buffer, or once the direction is bulk socket -> pipe -> socket with splice),
// waiting for `to` to take it; push the idle deadline forward; tell the meter. EOF is passed
// on as a half-close (the other direction goes on); a failure resets both ways.
//
// Lifetime: every pending wait holds the object (`hold`). When the last hold goes, `on_end`
// runs with whether its handler ran: if it did, the relay is over (nothing is left to wait
// for) and the awaiting coroutine resumes with the totals; if not, the loop was torn down
// with the wait pending, and the object goes with the coroutine's handler, so that
// coroutine unwinds (and logs its line) like any other.
#include "base/deadline_watch.hpp"
#include "proxy/edge_wait.hpp"
#include "proxy/relay.hpp"
#include "proxy/relay_spares.hpp"

#include <boost/asio/ip/tcp.hpp>

#include <array>
#include <chrono>
#include <cstddef>
#include <memory>
#include <utility>

namespace airlock::proxy {

class relay_op : private base::deadline_watch::entry {
 public:
  relay_op(const relay_op&) = delete;
  relay_op& operator=(const relay_op&) = delete;

  // Starts both ways; from here the last hold to go calls `on_end`.
  void start();

 protected:
  // Called once, when nothing holds the op any more; must free it.
  using end_fn = void (*)(relay_op& op, bool ran);

  relay_op(end_fn on_end, boost::asio::ip::tcp::socket& client, boost::asio::ip::tcp::socket& upstream,
           std::chrono::steady_clock::duration idle_limit, relay_meter* meter, request_gate* gate,
           base::cut_switch* cut);
  ~relay_op();

  const relay_totals& totals() const noexcept { return totals_; }

 private:
  using tcp = boost::asio::ip::tcp;

  struct way {
#if AIRLOCK_EDGE_WAIT
    way(tcp::socket& f, tcp::socket& t, bool u, edge_wait::done_fn ready, relay_op* op)
        : from(f), to(t), up(u), edge(ready, op) {}
#else
    way(tcp::socket& f, tcp::socket& t, bool u, void (*)(void*, bool, const boost::system::error_code&), relay_op*)
        : from(f), to(t), up(u) {}
#endif
    tcp::socket& from;
    tcp::socket& to;
    bool up;
    bool done = false;
    bool drained = false;            // this step's read found `from` empty, and the loop has not polled since
    bool bulk = false;               // a read filled the copy buffer: the rest goes by splice
    bool splice_ok = true;           // splice was not refused (EINVAL) for this pair
    bool full = false;               // this step's read took all it asked for: more may be waiting
    bool eof_next = false;           // `from` said EOF behind this step's bytes
    bool refused_next = false;       // the gate refused a request behind this step's bytes
    int reset_next = 0;              // `from` reset (or failed) behind this step's bytes: the errno
    int in_a_row = 0;                // steps since this way last waited for the loop
    std::size_t pending = 0;         // read from `from`, not yet written to `to`
    std::size_t moved = 0;           // this step's bytes
    const std::byte* out = nullptr;  // where they are: the buffer, or what the gate admitted
    std::unique_ptr<relay_spares::pipe_pair> pipe;      // only while bytes are in it
    std::unique_ptr<relay_spares::copy_buffer> buffer;  // the same
#if AIRLOCK_EDGE_WAIT
    edge_wait edge;  // how a drained `from` is waited for
#endif

    // Back to the pools; a pipe with bytes that will never be written is closed instead.
    void let_go();
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

  // Waiting.
  void release(bool ran);
  void first_wait(std::size_t i);
  void wait_readable(std::size_t i);
  void wait_writable(std::size_t i);
  template <std::size_t I>
  static void edge_ready(void* self, bool ran, const boost::system::error_code& ec);

  // A step: read what `from` holds (by splice once bulk, else copied), write it to `to`.
  void readable(std::size_t i, boost::system::error_code ec);
  enum class spliced { step_taken, copy_instead };
  spliced splice_in(std::size_t i, std::size_t step_limit);
  void copy_in(std::size_t i, std::size_t step_limit);
  std::size_t room_plus_one(const way& w) const noexcept;
  void writable(std::size_t i, boost::system::error_code ec);
  void flush(std::size_t i);
  void stepped(std::size_t i);
  bool gated(const way& w) const noexcept { return gate_ != nullptr && w.up; }

  // Endings.
  void timed_out();
  void switched_off();
  void refused(way& w);
  void eof(way& w);
  way& other(const way& w) noexcept { return &w == &ways_[0] ? ways_[1] : ways_[0]; }
  void failed(const way& w, const tcp::socket& side, int error = 0);
  void end_with_reset(const tcp::socket* failed = nullptr);
  void finish(way& w);
  bool over() const noexcept { return ways_[0].done && ways_[1].done; }
  void end_both();

  end_fn on_end_;
  base::deadline_watch& watch_;
  std::chrono::steady_clock::duration idle_limit_;
  relay_meter* meter_;
  request_gate* gate_;
  base::cut_switch* cut_;
  bool refusing_ = false;  // the gate refused: the client is left open when the relay ends
  relay_totals totals_{};
  int holds_ = 0;
  std::array<way, 2> ways_;  // [0] client -> upstream, [1] upstream -> client
};

}  // namespace airlock::proxy
