#pragma once
// The one place the data path reaches into Asio's implementation (boost::asio::detail): to
// wait on a drained socket without re-arming it and to read what epoll last reported of a
// socket (proxy/edge_wait.hpp), and to register the sockets airlock makes with their loop
// itself, telling Asio what airlock already knows of them (proxy/own_socket.hpp). All save
// system calls on every connection; all exist only for the Asio they were written against
// (Boost 1.81, the epoll reactor). Anywhere else, or when the build turns them off (CMake
// option AIRLOCK_ASIO_INTERNALS=OFF, which sets AIRLOCK_ALLOW_ASIO_INTERNALS=0),
// AIRLOCK_ASIO_INTERNALS is 0 and the callers take Asio's public way.
#include <boost/asio/ip/tcp.hpp>
#include <boost/version.hpp>

#ifndef AIRLOCK_ALLOW_ASIO_INTERNALS
#define AIRLOCK_ALLOW_ASIO_INTERNALS 1
#endif

#if AIRLOCK_ALLOW_ASIO_INTERNALS && BOOST_VERSION == 108100 && defined(BOOST_ASIO_HAS_EPOLL) && \
    !defined(BOOST_ASIO_HAS_IO_URING_AS_DEFAULT)
#define AIRLOCK_ASIO_INTERNALS 1
#include <boost/asio/detail/epoll_reactor.hpp>
#include <boost/asio/detail/scheduler_operation.hpp>
#include <boost/asio/detail/socket_ops.hpp>
#include <boost/asio/execution/context.hpp>
#include <boost/asio/query.hpp>
#include <boost/system/error_code.hpp>

#include <cerrno>
#include <cstdint>

#include <sys/epoll.h>
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
// implementation (a socket's is protected, above); the loop's epoll and the pool of its
// registrations; and in a socket's registration (Asio's descriptor_state) the fields
// Asio's register_descriptor fills in: the loop, the descriptor, whether it is shut down,
// what it asked epoll for, whether Asio's next read tries the socket first, and, as the
// operation the loop queues for it, the events of the last epoll_wait that reported it. An
// explicit instantiation may name private and protected members (the standard exempts it
// from access checking), which is how `grant` hands out pointers to them.
namespace asio_access {
using reactor = boost::asio::detail::epoll_reactor;
using descriptor_state = reactor::descriptor_state;
using scheduler_operation = boost::asio::detail::scheduler_operation;

struct acceptor_impl {
  using type = boost::asio::detail::io_object_impl<boost::asio::detail::reactive_socket_service<boost::asio::ip::tcp>,
                                                   boost::asio::any_io_executor>
      boost::asio::ip::tcp::acceptor::*;
  friend type member(acceptor_impl);
};
struct allocate_state {
  using type = descriptor_state* (reactor::*)();
  friend type member(allocate_state);
};
struct epoll_fd {
  using type = int reactor::*;
  friend type member(epoll_fd);
};
struct state_mutex {
  using type = boost::asio::detail::conditionally_enabled_mutex descriptor_state::*;
  friend type member(state_mutex);
};
struct state_reactor {
  using type = reactor* descriptor_state::*;
  friend type member(state_reactor);
};
struct state_descriptor {
  using type = int descriptor_state::*;
  friend type member(state_descriptor);
};
struct state_shutdown {
  using type = bool descriptor_state::*;
  friend type member(state_shutdown);
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
template struct grant<allocate_state, &reactor::allocate_descriptor_state>;
template struct grant<epoll_fd, &reactor::epoll_fd_>;
template struct grant<state_mutex, &descriptor_state::mutex_>;
template struct grant<state_reactor, &descriptor_state::reactor_>;
template struct grant<state_descriptor, &descriptor_state::descriptor_>;
template struct grant<state_shutdown, &descriptor_state::shutdown_>;
template struct grant<registered_events, &descriptor_state::registered_events_>;
template struct grant<try_speculative, &descriptor_state::try_speculative_>;
template struct grant<last_events, &scheduler_operation::task_result_>;
}  // namespace asio_access

struct acceptor_internals {
  static auto& of(boost::asio::ip::tcp::acceptor& a) {
    return (a.*member(asio_access::acceptor_impl{})).get_implementation();
  }
};

struct registration_internals {
  static asio_access::descriptor_state& of(boost::asio::ip::tcp::socket& s) {
    return *socket_internals::of(s).reactor_data_;
  }
  // What the loop asks epoll to report for `s` (a change takes effect at the next re-arm).
  static std::uint32_t& asked(boost::asio::ip::tcp::socket& s) {
    return of(s).*member(asio_access::registered_events{});
  }
  // Whether Asio's next read on `s` tries the socket before it waits: true after every
  // edge the loop reported, false after a read of Asio's came back short; from the
  // registration, true by Asio's and false by airlock's (register_socket, below).
  static bool& read_may_find_bytes(boost::asio::ip::tcp::socket& s) {
    return (of(s).*member(asio_access::try_speculative{}))[boost::asio::detail::epoll_reactor::read_op];
  }
  // The events the loop's last epoll_wait reported for `s` (set as it collects them,
  // before any handler runs). descriptor_state derives privately from the operation that
  // holds them; a C-style cast is the one conversion that may name a private base.
  static unsigned int& last_reported(asio_access::descriptor_state& d) {
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wold-style-cast"
    auto* op = (asio_access::scheduler_operation*)&d;  // NOLINT(cppcoreguidelines-pro-type-cstyle-cast)
#pragma GCC diagnostic pop
    return op->*member(asio_access::last_events{});
  }
  static unsigned int last_reported(boost::asio::ip::tcp::socket& s) { return last_reported(of(s)); }

  // Asio's assign() of `fd` to `s` (closed), done as Boost 1.81's do_assign and
  // epoll_reactor::register_descriptor do it, with three differences. The registration
  // asks epoll for EPOLLRDHUP from the start, so that the loop's reports say whether a FIN
  // came (assign asks for input only, and adding it later costs an EPOLL_CTL_MOD per
  // socket). Asio is told that `fd` is non-blocking and no duplicate (it would otherwise
  // make it non-blocking itself with an ioctl, and remove it from epoll before closing it).
  // And Asio's next read on `s` waits for the loop's report instead of trying the socket
  // first: nothing can be there that the loop will not report, since epoll checks an
  // edge-triggered registration as it adds it and reports it if it is readable then.
  static boost::system::error_code register_socket(boost::asio::ip::tcp::socket& s,
                                                   const boost::asio::ip::tcp& protocol, int fd) {
    namespace ops = boost::asio::detail::socket_ops;
    using namespace asio_access;
    auto& impl = socket_internals::of(s);
    if (impl.socket_ != boost::asio::detail::invalid_socket) return boost::asio::error::already_open;
    auto& loop = boost::asio::use_service<reactor>(
        boost::asio::query(s.get_executor(), boost::asio::execution::context));
    descriptor_state* state = (loop.*member(allocate_state{}))();
    {
      boost::asio::detail::conditionally_enabled_mutex::scoped_lock lock(state->*member(state_mutex{}));
      state->*member(state_reactor{}) = &loop;
      state->*member(state_descriptor{}) = fd;
      state->*member(state_shutdown{}) = false;
      for (bool& may : state->*member(try_speculative{})) may = true;
      (state->*member(try_speculative{}))[reactor::read_op] = false;
      last_reported(*state) = 0;  // a registration is reused: it kept its last socket's
    }
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLERR | EPOLLHUP | EPOLLPRI | EPOLLET | EPOLLRDHUP;
    ev.data.ptr = state;
    state->*member(registered_events{}) = ev.events;
    if (::epoll_ctl(loop.*member(epoll_fd{}), EPOLL_CTL_ADD, fd, &ev) != 0) {
      const int error = errno;
      reactor::per_descriptor_data unused = state;
      loop.cleanup_descriptor_data(unused);
      return {error, boost::system::system_category()};
    }
    impl.reactor_data_ = state;
    impl.socket_ = fd;
    impl.state_ = ops::stream_oriented | ops::internal_non_blocking;
    impl.protocol_ = protocol;
    return {};
  }
};

#endif

}  // namespace airlock::proxy
