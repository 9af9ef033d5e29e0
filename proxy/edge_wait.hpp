#pragma once
// A wait for a socket to turn readable that costs no system call, for a socket a read has
// just found empty.
//
// Asio registers a socket with its loop's epoll once, edge-triggered for input. Its
// async_wait, though, re-arms the socket with EPOLL_CTL_MOD on every wait, because in
// general it cannot know whether the socket is readable already (an edge may have come and
// gone while nothing waited). The relay can know: when a read came back short or empty
// and the loop has not polled since, every byte that arrives from then on raises a new
// edge, and the loop will report it. This wait queues itself in Asio's reactor for that
// edge, as Asio's own speculative reads do when they find nothing: no epoll_ctl. That is
// how nginx waits (a socket registered once, read until EAGAIN); on a TLS connection it
// spares about one system call per relay step (proxy/README.md).
//
// It reaches into Asio's reactor (proxy/asio_internals.hpp), so it exists only for the Asio
// it was written against (Boost 1.81, the epoll reactor); anywhere else AIRLOCK_EDGE_WAIT is
// 0 and the relay re-arms with async_wait after each step.
#include "proxy/asio_internals.hpp"

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/system/error_code.hpp>

#include <cstddef>

#define AIRLOCK_EDGE_WAIT AIRLOCK_ASIO_INTERNALS
#if AIRLOCK_EDGE_WAIT
#include <boost/asio/detail/reactor.hpp>
#include <boost/asio/detail/reactor_op.hpp>
#endif

namespace airlock::proxy {

#if AIRLOCK_EDGE_WAIT

// One wait, reused: its owner keeps it (and itself) alive while it is pending, and starts
// it again only after it completed. Completion calls `done(owner, ran, ec)` on the loop:
// `ran` is false when the loop is torn down with the wait pending (the owner must then only
// let go), `ec` is set when the wait was cancelled or the socket closed.
class edge_wait : private boost::asio::detail::reactor_op {
 public:
  using done_fn = void (*)(void* owner, bool ran, const boost::system::error_code& ec);

  edge_wait(done_fn on_done, void* owner) noexcept
      : reactor_op(boost::system::error_code(), &edge_wait::look, &edge_wait::complete),
        done_(on_done),
        owner_(owner) {}
  edge_wait(const edge_wait&) = delete;
  edge_wait& operator=(const edge_wait&) = delete;

  // `s`: open, non-blocking, on this loop, and read empty (or short) since the loop last
  // polled. Anything else would wait for an edge that already came. A listener the same:
  // accept() found nothing since the loop last polled.
  void start(boost::asio::ip::tcp::socket& s);
  void start(boost::asio::ip::tcp::acceptor& a);

 private:
  template <typename Impl>
  void start_on(Impl& impl, const boost::asio::any_io_executor& loop);
  static status look(reactor_op* base) noexcept;
  static void complete(void* owner, boost::asio::detail::operation* base, const boost::system::error_code&,
                       std::size_t) noexcept;

  done_fn done_;
  void* owner_;
  boost::asio::detail::reactor* reactor_ = nullptr;  // the loop's, found at the first start
  bool starting_ = false;
};

#endif

// The same wait for a coroutine, on a listener whose accept() just found nothing; without
// Asio's internals, Asio's async_wait. Completes with operation_aborted when the listener
// is closed.
boost::asio::awaitable<boost::system::error_code> next_connection(boost::asio::ip::tcp::acceptor& a);

// A read of airlock's own (not Asio's) found `s` empty, and the loop has not polled since:
// Asio's next read on it then queues itself for the next edge at once, instead of first
// trying the socket (a recv that would find nothing). Without Asio's internals, nothing.
void found_empty(boost::asio::ip::tcp::socket& s) noexcept;

// Whether `s` may hold bytes or a FIN that its loop will not report again (their edge came
// and went and nothing read `s` to the end since), so that a wait for the next edge could
// wait past them:
//  - `no` for a socket airlock registered (proxy/own_socket.hpp) whose every edge since a
//    read of Asio's last found it empty was read to the end: Asio keeps that flag (a report
//    sets it, its short read clears it; airlock's registration starts it cleared, since
//    epoll reports a registration that is readable as it is added), and the loop's last
//    report names no FIN, reset or urgent byte;
//  - `maybe` for such a socket when either says otherwise: read it before waiting;
//  - `unknown` for a socket Asio registered, or without Asio's internals: re-arm it
//    (async_wait), after `report_peer_close`.
enum class unreported_input { no, maybe, unknown };
unreported_input input_left_unreported(boost::asio::ip::tcp::socket& s) noexcept;

// A short read empties a socket, except that a FIN queued behind the bytes stays (the next
// read returns it), and that a read stops short before an urgent byte with bytes behind it.
// Which was it? With EPOLLRDHUP asked for, the loop's last report for the socket says: a FIN
// that came before that report is in it (epoll reports the socket's state as it collects
// it), and one that came after raises a new edge, as bytes do; an urgent byte not yet read
// is reported as EPOLLPRI. So after a short read the relay waits for the next edge when
// told `nothing`, passes the FIN on without reading it when told `fin`, reads on at once
// when told `read_again`, and looks once more when told `look` (a reset reported, the
// report cannot say, or without Asio's internals). A socket airlock registered asks for
// EPOLLRDHUP from the start; one Asio registered asks once `report_peer_close` has been
// called and the socket re-armed (its next async_wait; the re-arm also raises an edge for
// a FIN already there). Each loop runs on one thread: the report is written by that
// thread's epoll_wait and read by its handlers.
enum class after_short_read { nothing, fin, read_again, look };
after_short_read what_a_short_read_left(boost::asio::ip::tcp::socket& s) noexcept;
void report_peer_close(boost::asio::ip::tcp::socket& s) noexcept;

}  // namespace airlock::proxy
