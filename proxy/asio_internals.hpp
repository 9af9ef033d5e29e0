#pragma once
// The one place the data path reaches into Asio's implementation (boost::asio::detail): to
// wait on a drained socket without re-arming it and to ask epoll for a peer's FIN and read
// what it last reported (proxy/edge_wait.hpp), and to tell Asio what airlock already knows
// about the sockets it makes (proxy/own_socket.hpp). All save system calls on every
// connection; all exist only for the Asio they were written against (Boost 1.81, the epoll
// reactor). Anywhere else AIRLOCK_ASIO_INTERNALS is 0 and the callers take Asio's public way.
#include <boost/asio/ip/tcp.hpp>
#include <boost/version.hpp>

#if BOOST_VERSION == 108100 && defined(BOOST_ASIO_HAS_EPOLL) && !defined(BOOST_ASIO_HAS_IO_URING_AS_DEFAULT)
#define AIRLOCK_ASIO_INTERNALS 1
#include <boost/asio/detail/epoll_reactor.hpp>
#include <boost/asio/detail/scheduler_operation.hpp>
#include <boost/asio/detail/socket_ops.hpp>

#include <cstdint>
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

// What the data path reads and sets of Asio's that Asio keeps to itself: an acceptor's
// implementation (a socket's is protected, above) and, in a socket's registration with its
// loop's epoll (Asio's descriptor_state), what it asked epoll for, whether Asio's next
// read tries the socket first, and, as the operation the loop queues for it, the events of
// the last epoll_wait that reported it. An explicit instantiation may name private and
// protected members (the standard exempts it from access checking), which is how `grant`
// hands out pointers to them.
namespace asio_access {
using descriptor_state = boost::asio::detail::epoll_reactor::descriptor_state;
using scheduler_operation = boost::asio::detail::scheduler_operation;

struct acceptor_impl {
  using type = boost::asio::detail::io_object_impl<boost::asio::detail::reactive_socket_service<boost::asio::ip::tcp>,
                                                   boost::asio::any_io_executor>
      boost::asio::ip::tcp::acceptor::*;
  friend type member(acceptor_impl);
};
struct registered_events {
  using type = std::uint32_t descriptor_state::*;
  friend type member(registered_events);
};
struct try_speculative {
  using type = bool (descriptor_state::*)[boost::asio::detail::epoll_reactor::max_ops];
  friend type member(try_speculative);
};
struct last_events {
  using type = unsigned int scheduler_operation::*;
  friend type member(last_events);
};

template <typename Tag, typename Tag::type M>
struct grant {
  friend typename Tag::type member(Tag) { return M; }
};
template struct grant<acceptor_impl, &boost::asio::ip::tcp::acceptor::impl_>;
template struct grant<registered_events, &descriptor_state::registered_events_>;
template struct grant<try_speculative, &descriptor_state::try_speculative_>;
template struct grant<last_events, &scheduler_operation::task_result_>;
}  // namespace asio_access

struct acceptor_internals {
  static auto& of(boost::asio::ip::tcp::acceptor& a) { return (a.*member(asio_access::acceptor_impl{})).get_implementation(); }
};

struct registration_internals {
  static asio_access::descriptor_state& of(boost::asio::ip::tcp::socket& s) { return *socket_internals::of(s).reactor_data_; }
  // What the loop asks epoll to report for `s`, from the next re-arm on.
  static std::uint32_t& asked(boost::asio::ip::tcp::socket& s) {
    return of(s).*member(asio_access::registered_events{});
  }
  // Whether Asio's next read on `s` tries the socket before it waits: true from the socket's
  // registration and after every edge, false after a read of Asio's came back short.
  static bool& read_may_find_bytes(boost::asio::ip::tcp::socket& s) {
    return (of(s).*member(asio_access::try_speculative{}))[boost::asio::detail::epoll_reactor::read_op];
  }
  // The events the loop's last epoll_wait reported for `s` (set as it collects them,
  // before any handler runs). descriptor_state derives privately from the operation that
  // holds them; a C-style cast is the one conversion that may name a private base.
  static unsigned int last_reported(boost::asio::ip::tcp::socket& s) {
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wold-style-cast"
    auto* op = (asio_access::scheduler_operation*)&of(s);  // NOLINT(cppcoreguidelines-pro-type-cstyle-cast)
#pragma GCC diagnostic pop
    return op->*member(asio_access::last_events{});
  }
};

#endif

}  // namespace airlock::proxy
