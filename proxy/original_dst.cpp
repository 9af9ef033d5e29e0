#include "proxy/original_dst.hpp"

#include <cerrno>
#include <cstring>

#include <netinet/in.h>
#include <sys/socket.h>

namespace airlock::proxy {
namespace {

// From <linux/netfilter_ipv4.h> and <linux/netfilter_ipv6/ip6_tables.h>; those headers
// drag in kernel types that clash with glibc's, so the two constants live here.
constexpr int so_original_dst = 80;
constexpr int ip6t_so_original_dst = 80;

// The original tuple's destination, as conntrack kept it (ENOENT: no entry).
boost::system::result<boost::asio::ip::tcp::endpoint, std::error_code> translated_dst(int fd, bool v4) noexcept {
  if (v4) {
    sockaddr_in sa{};
    socklen_t len = sizeof sa;
    if (::getsockopt(fd, SOL_IP, so_original_dst, &sa, &len) != 0)
      return std::error_code(errno, std::generic_category());
    boost::asio::ip::address_v4::bytes_type b;
    std::memcpy(b.data(), &sa.sin_addr, 4);
    return boost::asio::ip::tcp::endpoint(boost::asio::ip::address_v4(b), ntohs(sa.sin_port));
  }
  sockaddr_in6 sa{};
  socklen_t len = sizeof sa;
  if (::getsockopt(fd, SOL_IPV6, ip6t_so_original_dst, &sa, &len) != 0)
    return std::error_code(errno, std::generic_category());
  boost::asio::ip::address_v6::bytes_type b;
  std::memcpy(b.data(), &sa.sin6_addr, 16);
  return boost::asio::ip::tcp::endpoint(boost::asio::ip::address_v6(b), ntohs(sa.sin6_port));
}

}  // namespace

boost::system::result<boost::asio::ip::tcp::endpoint, std::error_code> original_dst(
    boost::asio::ip::tcp::socket& socket, const boost::asio::ip::tcp::endpoint& peer) noexcept {
  const int fd = socket.native_handle();
  const bool v4 = peer.address().is_v4() || peer.address().to_v6().is_v4_mapped();
  auto found = translated_dst(fd, v4);
  if (found.has_value() || found.error() != std::errc::no_such_file_or_directory) return found;
  // No conntrack entry: accepted from a TPROXY listener without connection tracking, where
  // nothing was translated and the local end is the address the client meant. (With
  // tracking, the original tuple above already says the same.)
  boost::system::error_code ec;
  const auto local = socket.local_endpoint(ec);
  if (ec) return std::error_code(ec.value(), std::generic_category());
  int transparent = 0;
  socklen_t size = sizeof transparent;
  const bool v4_socket = peer.address().is_v4();
  if (::getsockopt(fd, v4_socket ? SOL_IP : SOL_IPV6, v4_socket ? IP_TRANSPARENT : IPV6_TRANSPARENT, &transparent,
                   &size) == 0 &&
      transparent != 0)
    return local;
  return found;
}

}  // namespace airlock::proxy
