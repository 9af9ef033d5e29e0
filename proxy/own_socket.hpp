#pragma once
// Sockets of the data path, with what airlock knows of them told to Asio up front. Asio
// learns that a socket is non-blocking only by making it so itself (an ioctl before its first
// operation), and it takes a descriptor it did not open for a possible duplicate, removing it
// from epoll before closing it (EPOLL_CTL_DEL) in case another descriptor keeps the open file
// alive. An upstream socket opened with SOCK_NONBLOCK, and a connection accept4(2) has just
// returned with SOCK_NONBLOCK, need neither call. airlock also registers these sockets with
// their loop's epoll itself, asking for EPOLLRDHUP from the start (the relay's reads need to
// know whether a FIN came: proxy/edge_wait.hpp), where adding it later would cost an
// EPOLL_CTL_MOD per socket. Where Asio's internals are out of reach
// (proxy/asio_internals.hpp) these take Asio's public way, and cost what they cost before.
#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/system/error_code.hpp>

namespace airlock::proxy {

// Opens `s` (closed) for `protocol`, non-blocking and close-on-exec from the start.
boost::system::error_code open_nonblocking(boost::asio::ip::tcp::socket& s, const boost::asio::ip::tcp& protocol);

// Closes with a RST instead of a FIN (SO_LINGER 0, dropping what is still queued to send):
// the honest end of a connection that was refused, or whose other side broke. Set by hand,
// since Asio turns off a linger it knows of when a socket is destroyed. Closed sockets are
// left alone.
void close_with_reset(int fd) noexcept;
void close_with_reset(boost::asio::ip::tcp::socket& s) noexcept;

// accept4(2) on `listener` with `flags`, and the peer it returned: the descriptor, or -1 with
// errno set. Waits for nothing (the listener decides whether it blocks).
int accept_with_peer(boost::asio::ip::tcp::acceptor& listener, boost::asio::ip::tcp::endpoint& peer,
                     int flags) noexcept;

// The next connection on `listener`, accepted non-blocking (accept4 with SOCK_NONBLOCK: no
// ioctl later) and, when none is waiting, waited for without re-arming the listener
// (proxy/edge_wait.hpp). Errors are accept(2)'s (EMFILE, ENFILE, ENOBUFS...), or
// operation_aborted once the listener is closed; a connection reset while it waited is
// skipped, as Asio's accept skips it.
//
// With `admit`, it is asked right before each accept(2), after any wait: false ends the call
// without accepting (`held` set, no error), so a listener at a cap leaves the connection in
// the kernel's queue rather than taking it only to reset it.
struct accepted_connection {
  boost::system::error_code ec;
  boost::asio::ip::tcp::socket socket;
  boost::asio::ip::tcp::endpoint peer;  // as accept(2) returned it: no getpeername
  bool held = false;                    // `admit` said no: nothing was accepted
};
boost::asio::awaitable<accepted_connection> accept_nonblocking(boost::asio::ip::tcp::acceptor& listener,
                                                               bool (*admit)(const void*) = nullptr,
                                                               const void* admit_arg = nullptr);

}  // namespace airlock::proxy
