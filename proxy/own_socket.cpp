#include "proxy/own_socket.hpp"

#include "proxy/asio_internals.hpp"
#include "proxy/edge_wait.hpp"

#include <boost/asio/use_awaitable.hpp>

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace airlock::proxy {
namespace {

// Hands `fd`, non-blocking and not shared with any other descriptor, to `s`.
boost::system::error_code adopt(boost::asio::ip::tcp::socket& s, const boost::asio::ip::tcp& protocol, int fd) {
  boost::system::error_code ec;
#if AIRLOCK_ASIO_INTERNALS
  ec = registration_internals::register_socket(s, protocol, fd);
#else
  s.assign(protocol, fd, ec);
  if (!ec) s.native_non_blocking(true, ec);  // Asio's own ioctl: the only way to tell it
#endif
  if (ec && s.native_handle() != fd) ::close(fd);  // never handed over
  return ec;
}

}  // namespace

boost::system::error_code open_nonblocking(boost::asio::ip::tcp::socket& s, const boost::asio::ip::tcp& protocol) {
  const int fd = ::socket(protocol.family(), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, protocol.protocol());
  if (fd < 0) return {errno, boost::system::system_category()};
  return adopt(s, protocol, fd);
}

void close_with_reset(int fd) noexcept {
  if (fd < 0) return;
  const ::linger abort_on_close{1, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &abort_on_close, sizeof abort_on_close);
  ::close(fd);
}

void close_with_reset(boost::asio::ip::tcp::socket& s) noexcept {
  if (!s.is_open()) return;
  const ::linger abort_on_close{1, 0};
  ::setsockopt(s.native_handle(), SOL_SOCKET, SO_LINGER, &abort_on_close, sizeof abort_on_close);
  boost::system::error_code ignored;
  s.close(ignored);  // through Asio: its waits on `s` end (operation_aborted)
}

int accept_with_peer(boost::asio::ip::tcp::acceptor& listener, boost::asio::ip::tcp::endpoint& peer,
                     int flags) noexcept {
  sockaddr_storage from{};
  socklen_t size = sizeof from;
  const int fd = ::accept4(listener.native_handle(), reinterpret_cast<sockaddr*>(&from), &size, flags);
  if (fd >= 0 && size <= peer.capacity()) {
    std::memcpy(peer.data(), &from, size);
    peer.resize(size);
  }
  return fd;
}

boost::asio::awaitable<accepted_connection> accept_nonblocking(boost::asio::ip::tcp::acceptor& listener,
                                                               bool (*admit)(const void*), const void* admit_arg) {
  accepted_connection out{{}, boost::asio::ip::tcp::socket(listener.get_executor()), {}};
  // The listener itself must not block the loop (once per listener: Asio keeps the flag).
  if (!listener.native_non_blocking()) listener.native_non_blocking(true, out.ec);
  if (out.ec) co_return out;
  for (;;) {
    if (!listener.is_open()) {
      out.ec = boost::asio::error::operation_aborted;
      co_return out;
    }
    if (admit != nullptr && !admit(admit_arg)) {
      out.held = true;
      co_return out;
    }
    if (const int fd = accept_with_peer(listener, out.peer, SOCK_NONBLOCK | SOCK_CLOEXEC); fd >= 0) {
      out.ec = adopt(out.socket, out.peer.protocol(), fd);
      co_return out;
    }
    if (errno == EINTR || errno == ECONNABORTED) continue;  // a connection reset while it waited: the next one
    if (errno != EAGAIN && errno != EWOULDBLOCK) {
      out.ec = {errno, boost::system::system_category()};
      co_return out;
    }
    // None waiting, and the loop has not polled since: every connection from now on raises
    // an edge.
    if (auto ec = co_await next_connection(listener); ec) {
      out.ec = ec;
      co_return out;
    }
  }
}

}  // namespace airlock::proxy
