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
// 0 and the relay re-arms with async_wait as before.
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
      : reactor_op(boost::system::error_code(), &edge_wait::look, &edge_wait::complete), done_(on_done), owner_(owner) {}
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

// A short read empties the socket, except that a FIN queued behind the bytes stays: the
// next read returns it. Was it there? With EPOLLRDHUP asked for, the loop's last report
// for the socket says: a FIN that came before that report is in it (epoll reports the
// socket's state when it collects it), and one that came after raises a new edge, as
// bytes do. So a relay that was told no FIN waits for the edge instead of looking again
// (on TLS, one recv less per step). Asked for with `report_peer_close` before the
// socket's next re-arm (the relay's first wait is an async_wait, which re-arms; the
// re-arm also raises an edge for a FIN already there); until then, and without Asio's
// internals, `peer_close_maybe_queued` says yes. Each loop runs on one thread: the report
// is written by that thread's epoll_wait and read by its handlers.
void report_peer_close(boost::asio::ip::tcp::socket& s) noexcept;
bool peer_close_maybe_queued(boost::asio::ip::tcp::socket& s) noexcept;

}  // namespace airlock::proxy
