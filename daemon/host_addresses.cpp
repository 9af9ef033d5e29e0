#include "daemon/host_addresses.hpp"

#include "base/errno_text.hpp"

#include <ifaddrs.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>

namespace airlock::daemon {

namespace asio = boost::asio;

std::vector<policy::cidr> read_host_addresses(std::string* error) {
  std::vector<policy::cidr> out;
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) {
    if (error) *error = std::string("getifaddrs: ") + base::errno_text();
    return out;
  }
  for (const ifaddrs* i = list; i != nullptr; i = i->ifa_next) {
    if (i->ifa_addr == nullptr) continue;
    if (i->ifa_addr->sa_family == AF_INET) {
      const auto* in = reinterpret_cast<const sockaddr_in*>(i->ifa_addr);
      out.push_back({asio::ip::address_v4(ntohl(in->sin_addr.s_addr)), 32});
    } else if (i->ifa_addr->sa_family == AF_INET6) {
      const auto* in6 = reinterpret_cast<const sockaddr_in6*>(i->ifa_addr);
      asio::ip::address_v6::bytes_type b;
      std::memcpy(b.data(), in6->sin6_addr.s6_addr, b.size());
      out.push_back({asio::ip::address_v6(b), 128});
    }
  }
  freeifaddrs(list);
  return out;
}

host_address_watch::host_address_watch(asio::any_io_executor ex, std::function<void()> changed)
    : socket_(std::move(ex)), changed_(std::move(changed)) {}

std::string host_address_watch::start() {
  const int fd = ::socket(AF_NETLINK, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, NETLINK_ROUTE);
  if (fd < 0) return std::string("rtnetlink socket: ") + base::errno_text();
  sockaddr_nl local{};
  local.nl_family = AF_NETLINK;
  local.nl_groups = RTMGRP_IPV4_IFADDR | RTMGRP_IPV6_IFADDR;
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&local), sizeof local) != 0) {
    const std::string why = std::string("rtnetlink bind: ") + base::errno_text();
    ::close(fd);
    return why;
  }
  socket_.assign(fd);
  arm();
  return {};
}

void host_address_watch::stop() {
  boost::system::error_code ignored;
  socket_.close(ignored);
}

void host_address_watch::arm() {
  socket_.async_wait(asio::posix::stream_descriptor::wait_read, [this](const boost::system::error_code& ec) {
    if (ec) return;  // closed at shutdown
    // The messages only say that something changed; the whole list is read again, so an
    // overrun (ENOBUFS) loses nothing either.
    std::array<char, 8192> buf;
    for (;;) {
      const auto n = ::recv(socket_.native_handle(), buf.data(), buf.size(), MSG_DONTWAIT);
      if (n > 0 || (n < 0 && errno == ENOBUFS)) continue;
      break;
    }
    changed_();
    arm();
  });
}

}  // namespace airlock::daemon
