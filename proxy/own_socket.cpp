#include "proxy/own_socket.hpp"

#include "proxy/asio_internals.hpp"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

namespace airlock::proxy {
namespace {

#if AIRLOCK_ASIO_INTERNALS
namespace ops = boost::asio::detail::socket_ops;

void not_a_duplicate(boost::asio::ip::tcp::socket& s) noexcept {
  auto& impl = socket_internals::of(s);
  impl.state_ = static_cast<ops::state_type>(impl.state_ & ~ops::possible_dup);
}
#endif

// Hands `fd`, non-blocking and not shared with any other descriptor, to `s`.
boost::system::error_code adopt(boost::asio::ip::tcp::socket& s, const boost::asio::ip::tcp& protocol, int fd) {
  boost::system::error_code ec;
  s.assign(protocol, fd, ec);
  if (ec) {
    ::close(fd);
    return ec;
  }
#if AIRLOCK_ASIO_INTERNALS
  auto& impl = socket_internals::of(s);
  impl.state_ = static_cast<ops::state_type>(impl.state_ | ops::internal_non_blocking);
  not_a_duplicate(s);
#else
  s.native_non_blocking(true, ec);  // Asio's own ioctl: the only way to tell it
#endif
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

void accepted([[maybe_unused]] boost::asio::ip::tcp::socket& s) noexcept {
#if AIRLOCK_ASIO_INTERNALS
  not_a_duplicate(s);
#endif
}

}  // namespace airlock::proxy
