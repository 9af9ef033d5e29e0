#pragma once
// The one place the data path reaches into Asio's implementation (boost::asio::detail): to
// wait on a drained socket without re-arming it (proxy/edge_wait.hpp) and to tell Asio what
// airlock already knows about the sockets it makes (proxy/own_socket.hpp). Both save system
// calls on every connection; both exist only for the Asio they were written against (Boost
// 1.81, the epoll reactor). Anywhere else AIRLOCK_ASIO_INTERNALS is 0 and the callers take
// Asio's public way.
#include <boost/asio/ip/tcp.hpp>
#include <boost/version.hpp>

#if BOOST_VERSION == 108100 && defined(BOOST_ASIO_HAS_EPOLL) && !defined(BOOST_ASIO_HAS_IO_URING_AS_DEFAULT)
#define AIRLOCK_ASIO_INTERNALS 1
#include <boost/asio/detail/socket_ops.hpp>
#else
#define AIRLOCK_ASIO_INTERNALS 0
#endif

namespace airlock::proxy {

#if AIRLOCK_ASIO_INTERNALS

// basic_socket keeps its implementation protected; a pointer to that member, formed through
// a class derived from it, reads it without casting the socket to what it is not.
struct socket_internals : boost::asio::ip::tcp::socket {
  static auto& of(boost::asio::ip::tcp::socket& s) { return (s.*(&socket_internals::impl_)).get_implementation(); }
};

#endif

}  // namespace airlock::proxy
