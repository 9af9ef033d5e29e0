#include "proxy/relay_op.hpp"

#include "proxy/own_socket.hpp"

#include <boost/asio/post.hpp>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <limits>
#include <span>

#include <fcntl.h>
#include <sys/socket.h>

namespace airlock::proxy {
namespace {

namespace asio = boost::asio;
using asio::ip::tcp;
using relay_spares::copy_buffer;
using relay_spares::pipe_pair;
using relay_spares::spares;

// Steps moved one after another while each finds a full read behind it, before the way
// waits for the loop again (other connections get their turn).
constexpr int max_steps_in_a_row = 16;

// Both ways end quietly (the idle limit passed): a FIN each way.
void shut_both(tcp::socket& a, tcp::socket& b) {
  boost::system::error_code ignored;
  a.shutdown(tcp::socket::shutdown_both, ignored);
  b.shutdown(tcp::socket::shutdown_both, ignored);
}

// Both ways end with a reset, as the peer that failed ended its own: the other peer must
// not read a clean end of stream where bytes may have been lost (a download cut by the
// origin's RST would otherwise look complete to a client that reads to EOF). Only a close
// sends a RST (a shutdown would send a FIN first), so both sockets are closed here, not
// left to the caller; their pending waits end with operation_aborted. A socket that
// reported the failure itself is closed plainly: its connection is over already (reset,
// or timed out), and its close sends nothing either way.
void reset_both(tcp::socket& a, tcp::socket& b, const tcp::socket* failed = nullptr) {
  for (tcp::socket* s : {&a, &b}) {
    if (s != failed) {
      close_with_reset(*s);
      continue;
    }
    boost::system::error_code ignored;
    s->close(ignored);
  }
}

bool would_block() noexcept { return errno == EAGAIN || errno == EWOULDBLOCK; }

// splice never passes an urgent byte (MSG_OOB): stopped at one, it moves nothing, or returns
// 0 when a FIN is behind it, until a read steps over the byte. Whether that is why a splice
// from `s` moved nothing (or returned 0: `ended`): the loop's last report names an urgent
// byte, or, when it cannot say or the splice returned 0, the socket is at the urgent mark.
// A 0 asks the socket (one system call, once per bulk stream) because an urgent byte and a
// FIN that came while the way moved bulk steps without polling are in no report yet.
bool stopped_at_urgent_byte(tcp::socket& s, bool ended) noexcept {
  const auto left = what_a_short_read_left(s);
  if (left == after_short_read::read_again) return true;
  if (!ended && left != after_short_read::look) return false;
  return ::sockatmark(s.native_handle()) == 1;
}

// One relayed connection. Plain completion handlers drive it, not coroutines: an idle
// connection is then this object, two pending waits (either socket readable) and its
// place in the loop's deadline_watch, where a coroutine per direction and a watchdog joined
// with && and || cost three coroutine frames, four co_spawned threads and two parallel
// groups (proxy/README.md, "Memory per idle connection").
//
// Each direction repeats: wait until `from` is readable; move what is there (through a
// buffer, or once the direction is bulk socket -> pipe -> socket with splice), waiting for
// `to` to take it; push the idle deadline forward; tell the meter. EOF is passed on as a
// half-close (the other direction goes on); a failure resets both ways.
//
// Lifetime: every pending wait holds the object (`hold`). When the last hold goes after
// its handler ran, nothing is left to wait for: the relay is over, the object is freed
// and the awaiting coroutine resumes with the totals. When the last hold goes unrun (the
// loop is torn down with the wait pending), the object is freed with the awaiting
// coroutine's handler, so that coroutine unwinds (and logs its line) like any other.
}  // namespace

relay_op::relay_op(end_fn on_end, tcp::socket& client, tcp::socket& upstream,
                   std::chrono::steady_clock::duration idle_limit, relay_meter* meter, request_gate* gate,
                   base::cut_switch* cut)
    : on_end_(on_end),
      watch_(base::deadline_watch::of(client.get_executor())),
      idle_limit_(idle_limit),
      meter_(meter),
      gate_(gate),
      cut_(cut),
      ways_{way{client, upstream, true, &relay_op::edge_ready<0>, this},
            way{upstream, client, false, &relay_op::edge_ready<1>, this}} {}

relay_op::~relay_op() {
  if (cut_) cut_->disarm();
  watch_.forget(*this);
}

void relay_op::way::let_go() {
  spares<copy_buffer>().give_back(std::move(buffer));
  if (pending == 0) spares<pipe_pair>().give_back(std::move(pipe));
  pipe.reset();
}

void relay_op::start() {
  boost::system::error_code ec;
  // splice and the direct reads need sockets that never block the loop (most already
  // are, from their earlier asynchronous operations: no system call then).
  for (auto& w : ways_)
    if (!ec && !w.from.native_non_blocking()) w.from.native_non_blocking(true, ec);
  if (ec) {
    reset_both(ways_[0].from, ways_[1].from);
    ways_[0].done = ways_[1].done = true;
    asio::post(ways_[0].from.get_executor(), [h = hold(this)]() mutable { h.ran(); });  // completes once posted
    return;
  }
  on_due = [](base::deadline_watch::entry& e) { static_cast<relay_op&>(e).timed_out(); };
  watch_.watch(*this, idle_limit_, ways_[0].from.get_executor());
  if (cut_)
    cut_->arm(
        ways_[0].from.get_executor(), [](void* op) { static_cast<relay_op*>(op)->switched_off(); }, this);
  // A gate that refused a request among the first bytes: only the answers to the ones
  // before it are still to come.
  if (gate_ != nullptr && gate_->refused() != 0) refused(ways_[0]);
  else first_wait(0);
  first_wait(1);
}

// ---- waiting ----------------------------------------------------------------------------

void relay_op::release(bool ran) {
  if (--holds_ > 0) return;
  on_end_(*this, ran);
}

// A socket airlock registered (proxy/own_socket.hpp) says whether it may hold what its
// loop will not report again: if so it is read at once, if not its first wait is for the
// next edge, with no system call. One Asio registered is re-armed (async_wait), asking
// epoll to report a FIN from then on.
void relay_op::first_wait(std::size_t i) {
  switch (input_left_unreported(ways_[i].from)) {
    case unreported_input::no: ways_[i].drained = true; return wait_readable(i);
    case unreported_input::maybe:  // read on the loop, as a wait's handler would be
      return asio::post(ways_[i].from.get_executor(), [h = hold(this), i]() mutable { h.ran()->readable(i, {}); });
    case unreported_input::unknown: report_peer_close(ways_[i].from); return wait_readable(i);
  }
}

// A `from` read empty a moment ago waits for its next edge as it is (proxy/edge_wait.hpp);
// one the loop may have polled since is re-armed by Asio's async_wait.
void relay_op::wait_readable(std::size_t i) {
#if AIRLOCK_EDGE_WAIT
  if (std::exchange(ways_[i].drained, false)) {
    ++holds_;  // released by edge_ready, as a hold is by its wait's handler
    return ways_[i].edge.start(ways_[i].from);
  }
#endif
  ways_[i].from.async_wait(tcp::socket::wait_read,
                           [h = hold(this), i](boost::system::error_code ec) mutable { h.ran()->readable(i, ec); });
}

void relay_op::wait_writable(std::size_t i) {
  ways_[i].to.async_wait(tcp::socket::wait_write,
                         [h = hold(this), i](boost::system::error_code ec) mutable { h.ran()->writable(i, ec); });
}

template <std::size_t I>
void relay_op::edge_ready(void* self, bool ran, const boost::system::error_code& ec) {
  auto* op = static_cast<relay_op*>(self);
  if (ran) op->readable(I, ec);
  op->release(ran);
}

// ---- a step -----------------------------------------------------------------------------

void relay_op::readable(std::size_t i, boost::system::error_code ec) {
  way& w = ways_[i];
  if (w.done) return;
  if (ec) return failed(w, w.from);  // the socket went bad (a cancel found the way done)
  w.drained = false;
  // Small exchanges are copied: two system calls a step, where splice costs four and a
  // pipe. A stream that fills the buffer is bulk, and moves by splice from then on.
  if (w.bulk && w.splice_ok && !w.pipe) w.pipe = spares<pipe_pair>().take();
  const std::size_t step_limit = room_plus_one(w);
  if (w.pipe && splice_in(i, step_limit) == spliced::step_taken) return;
  copy_in(i, step_limit);
}

// A bulk step: socket -> pipe, then on to `to` (flush). copy_instead when an urgent byte
// stopped the splice: a copied step reads over it.
relay_op::spliced relay_op::splice_in(std::size_t i, std::size_t step_limit) {
  way& w = ways_[i];
  const auto in = ::splice(w.from.native_handle(), nullptr, w.pipe->write, nullptr,
                           std::min(w.pipe->capacity, step_limit), SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
  if (in > 0) {
    w.pending = w.moved = static_cast<std::size_t>(in);
    // A short splice can still leave bytes behind (the pipe ran out of slots before
    // bytes, or an urgent byte stopped it), so a bulk way always looks again before
    // it waits.
    w.full = true;
    flush(i);
    return spliced::step_taken;
  }
  const int error = in < 0 ? errno : 0;
  w.let_go();
  if (error == EINVAL) {
    w.splice_ok = false;  // this socket pair cannot splice; nothing was moved yet
    stepped(i);
  } else if (error == EINTR) {
    stepped(i);
  } else if (error != 0 && error != EAGAIN && error != EWOULDBLOCK) {
    failed(w, w.from, error);
  } else if (stopped_at_urgent_byte(w.from, in == 0)) {
    return spliced::copy_instead;
  } else if (in == 0) {
    eof(w);  // the end of the stream
  } else {
    w.drained = true;  // nothing to move
    stepped(i);
  }
  return spliced::step_taken;
}

// A copied step: socket -> buffer (or what the gate admits of it), then on to `to` (flush).
void relay_op::copy_in(std::size_t i, std::size_t step_limit) {
  way& w = ways_[i];
  if (!w.buffer) w.buffer = spares<copy_buffer>().take();
  const auto asked = std::min(w.buffer->bytes.size(), step_limit);
  const auto n = ::recv(w.from.native_handle(), w.buffer->bytes.data(), asked, MSG_DONTWAIT);
  if (n == 0) return eof(w);
  if (n < 0) {
    if (would_block() || errno == EINTR) {
      w.drained = would_block();
      w.let_go();
      return stepped(i);
    }
    return failed(w, w.from, errno);
  }
  auto got = static_cast<std::size_t>(n);
  // An answer and its sender's FIN often arrive together (a server that closes after
  // writing): the FIN found now leaves with the bytes, as one segment, and the way does
  // not wait for the loop again only to read EOF. The loop's last report says whether it
  // came (proxy/edge_wait.hpp); when it cannot say, one more look.
  const auto left = got < asked ? what_a_short_read_left(w.from) : after_short_read::nothing;
  if (left == after_short_read::fin) w.eof_next = true;
  if (left == after_short_read::look) {
    const auto more = ::recv(w.from.native_handle(), w.buffer->bytes.data() + got, asked - got, MSG_DONTWAIT);
    if (more == 0) w.eof_next = true;
    if (more > 0) got += static_cast<std::size_t>(more);
    // A reset this look took is reported once only (the socket reads EOF after it): it is
    // passed on right after the bytes before it.
    if (more < 0 && !would_block() && errno != EINTR) w.reset_next = errno;
  }
  w.pending = w.moved = got;
  w.out = w.buffer->bytes.data();
  // Bytes behind an urgent byte are read at once, as after a full read; any other short
  // read emptied the socket.
  w.full = got == asked || left == after_short_read::read_again;
  w.drained = got < asked && left != after_short_read::read_again;
  if (gated(w)) {
    // What goes up is what the gate admits (maybe bytes it held back from earlier reads),
    // at most what the meter allows a step.
    const auto admitted = gate_->admit(std::span<const std::byte>(w.buffer->bytes.data(), got));
    w.pending = w.moved = std::min(admitted.size(), step_limit);
    w.out = admitted.data();
    w.refused_next = gate_->refused() != 0;
  } else if (got == w.buffer->bytes.size()) {
    w.bulk = true;
  }
  flush(i);
}

// The most a step may read: one byte past what the meter still allows, so the step that
// crosses a budget is cut having passed at most that byte on.
std::size_t relay_op::room_plus_one(const way& w) const noexcept {
  const std::uint64_t room = meter_ ? meter_->room(w.up) : std::numeric_limits<std::uint64_t>::max();
  return room >= std::numeric_limits<std::size_t>::max() - 1 ? std::numeric_limits<std::size_t>::max()
                                                             : static_cast<std::size_t>(room) + 1;
}

void relay_op::writable(std::size_t i, boost::system::error_code ec) {
  way& w = ways_[i];
  if (w.done) return;
  if (ec) return failed(w, w.to);
  flush(i);
}

// Writes what this step read, waiting for `to` as often as it needs.
void relay_op::flush(std::size_t i) {
  way& w = ways_[i];
  while (w.pending > 0) {
    const auto offset = w.moved - w.pending;
    const auto out = w.pipe ? ::splice(w.pipe->read, nullptr, w.to.native_handle(), nullptr, w.pending,
                                       SPLICE_F_MOVE | SPLICE_F_NONBLOCK)
                            : ::send(w.to.native_handle(), w.out + offset, w.pending,
                                     MSG_DONTWAIT | MSG_NOSIGNAL | (w.eof_next ? MSG_MORE : 0));
    if (out > 0) {
      w.pending -= static_cast<std::size_t>(out);
      continue;
    }
    if (out < 0 && errno == EINTR) continue;
    if (out < 0 && !would_block()) return failed(w, w.to, errno);
    w.drained = false;  // the loop polls before `from` is read again
    return wait_writable(i);
  }
  if (gated(w)) gate_->passed();
  w.let_go();  // empty: every byte that went in came out
  stepped(i);
}

// A step is done (maybe with nothing moved): count, push the deadline, ask the meter.
// After a full read the next step starts at once: waiting would cost an epoll_ctl to
// re-arm the socket and a pass through the loop for bytes that are already there.
void relay_op::stepped(std::size_t i) {
  way& w = ways_[i];
  const auto moved = std::exchange(w.moved, 0);
  (w.up ? totals_.up : totals_.down) += moved;
  watch_.touch(*this);
  if (moved && meter_ && !meter_->moved(w.up, moved)) {
    totals_.cut = true;
    return end_with_reset();
  }
  if (w.refused_next) return refused(w);
  if (w.eof_next) return eof(w);  // the FIN joins the bytes held back by MSG_MORE
  if (w.reset_next != 0) return failed(w, w.from, w.reset_next);
  // (A gate may have held a full read back whole: more may be waiting all the same.)
  if (std::exchange(w.full, false) && (moved || gated(w)) && ++w.in_a_row < max_steps_in_a_row) return readable(i, {});
  w.in_a_row = 0;
  wait_readable(i);
}

// ---- endings ----------------------------------------------------------------------------

// Nothing moved either way for the idle limit (the watch calls this once).
void relay_op::timed_out() {
  if (over()) return;
  totals_.idle_timeout = true;
  end_both();
}

// The cut switch was pulled (the grant behind the connection ended): both peers are reset.
void relay_op::switched_off() {
  if (over()) return;
  totals_.cut = totals_.grant_ended = true;
  end_with_reset();
}

// The gate refused a request: nothing more from the client. The upstream hears a FIN
// after what went on, and its answers to that still come back; the client is left open.
void relay_op::refused(way& w) {
  refusing_ = true;
  boost::system::error_code ignored;
  w.to.shutdown(tcp::socket::shutdown_send, ignored);
  finish(w);
}

void relay_op::eof(way& w) {
  boost::system::error_code ignored;
  if (refusing_) return finish(w);  // the upstream is done: the client hears the refusal next
  if (!other(w).done) {
    w.to.shutdown(tcp::socket::shutdown_send, ignored);  // pass the half-close on
    return finish(w);
  }
  // The last way: `to` was read to its EOF and `from` shut for sending, so a close sends
  // this FIN as a shutdown would (nothing unread is left to turn it into a reset), and
  // spares the shutdown.
  finish(w);
  w.to.close(ignored);
  w.from.close(ignored);
}

// `side` reset (or failed, with `error` if a system call said so): the other peer is
// reset too, and the line says which.
void relay_op::failed(const way& w, const tcp::socket& side, int error) {
  totals_.reset = &side == &w.from ? (w.up ? reset_by::client : reset_by::upstream)
                                   : (w.up ? reset_by::upstream : reset_by::client);
  const bool side_over = error == ECONNRESET || error == EPIPE || error == ETIMEDOUT;
  end_with_reset(side_over ? &side : nullptr);
}

// A failure or a cut: both ways end at once, with a reset each way (`failed`, if one
// said so, is over already).
void relay_op::end_with_reset(const tcp::socket* failed) {
  for (auto& w : ways_) {
    w.done = true;
    w.let_go();
  }
  reset_both(ways_[0].from, ways_[1].from, failed);
  watch_.forget(*this);
}

void relay_op::finish(way& w) {
  w.done = true;
  w.let_go();
  if (over()) watch_.forget(*this);
}

// The idle watchdog ends both ways at once.
void relay_op::end_both() {
  for (auto& w : ways_) {
    w.done = true;
    w.let_go();
  }
  shut_both(ways_[0].from, ways_[1].from);
  boost::system::error_code ignored;
  ways_[0].from.cancel(ignored);
  ways_[1].from.cancel(ignored);
}

}  // namespace airlock::proxy
