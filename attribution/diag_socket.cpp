#include "attribution/diag_socket.hpp"

#include "attribution/sock_diag.hpp"

#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <cerrno>
#include <optional>

namespace airlock::attribution {

struct diag_socket::exchange_result {
  std::vector<sock_diag::socket_entry> sockets;
  int error = 0;  // errno: from the kernel's answer, or from send/recv
};

diag_socket::diag_socket(std::chrono::milliseconds timeout)
    : fd_(::socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG)) {
  if (!fd_) {
    open_error_ = errno;
    return;
  }
  // Every wait has a deadline, even on the kernel: a lookup that cannot finish says so.
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(timeout.count() / 1000);
  tv.tv_usec = static_cast<suseconds_t>((timeout.count() % 1000) * 1000);
  ::setsockopt(fd_.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(fd_.get(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
}

diag_socket::exchange_result diag_socket::exchange(const std::vector<std::byte>& request, std::uint32_t seq) {
  exchange_result out;
  if (request.empty()) {
    out.error = EAFNOSUPPORT;
    return out;
  }
  sockaddr_nl kernel{};
  kernel.nl_family = AF_NETLINK;
  if (::sendto(fd_.get(), request.data(), request.size(), 0, reinterpret_cast<const sockaddr*>(&kernel),
               sizeof kernel) < 0) {
    out.error = errno;
    return out;
  }
  auto& buffer = buffer_;
  for (;;) {
    const auto n = ::recv(fd_.get(), buffer.data(), buffer.size(), MSG_TRUNC);
    if (n < 0) {
      if (errno == EINTR) continue;
      out.error = errno == EAGAIN || errno == EWOULDBLOCK ? ETIMEDOUT : errno;
      return out;
    }
    if (static_cast<std::size_t>(n) > buffer.size()) {
      out.error = EMSGSIZE;
      return out;
    }
    auto reply = sock_diag::parse_reply(std::span(buffer).first(static_cast<std::size_t>(n)), seq);
    if (!reply) {
      out.error = EBADMSG;
      return out;
    }
    for (auto& s : reply->sockets) out.sockets.push_back(std::move(s));
    if (reply->done) {
      out.error = reply->error;
      return out;
    }
  }
}

diag_answer diag_socket::find(const socket_key& key) {
  if (!fd_) return {diag_answer::kind::failed, 0, open_error_};
  const std::uint32_t seq = ++seq_;
  const auto got = exchange(sock_diag::build_request(key, seq, sock_diag::request_kind::exact), seq);
  for (const auto& s : got.sockets) {
    // The kernel's lookup may fall back to a listener or a wildcard socket: only the
    // sandbox's own end counts.
    if (s.local_port != key.local_port) continue;
    if (key.proto == transport::tcp && s.remote_port != key.remote_port) continue;
    return {diag_answer::kind::found, s.inode, 0};
  }
  if (key.proto == transport::udp && (got.error == 0 || got.error == ENOENT)) return find_udp_by_port(key);
  if (got.error == 0 || got.error == ENOENT) return {diag_answer::kind::not_found, 0, 0};
  return {diag_answer::kind::failed, 0, got.error};
}

diag_answer diag_socket::find_udp_by_port(const socket_key& key) {
  // Best first: the exact remote, then an unconnected socket, then any on the port.
  std::optional<std::uint32_t> exact, unconnected, any;
  int error = 0;
  auto families = {false, true};
  for (bool v6 : families) {
    if (v6 == false && key.local_address.is_v6()) continue;
    const std::uint32_t seq = ++seq_;
    const auto got = exchange(sock_diag::build_dump_request(transport::udp, v6, seq), seq);
    if (got.error != 0) error = got.error;
    for (const auto& s : got.sockets) {
      if (s.local_port != key.local_port) continue;
      const auto local = unmapped(s.local_address);
      if (!local.is_unspecified() && local != key.local_address) continue;
      if (s.remote_port == key.remote_port && unmapped(s.remote_address) == key.remote_address) exact = s.inode;
      else if (s.remote_port == 0) unconnected = s.inode;
      else any = s.inode;
    }
  }
  if (auto inode = exact ? exact : unconnected ? unconnected : any) return {diag_answer::kind::found, *inode, 0};
  if (error != 0) return {diag_answer::kind::failed, 0, error};
  return {diag_answer::kind::not_found, 0, 0};
}

}  // namespace airlock::attribution
