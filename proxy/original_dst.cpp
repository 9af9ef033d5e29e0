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
    boost::asio::ip::tcp::socket& socket, const boost::asio::ip::tcp::endpoint& peer, interception how) noexcept {
  if (how == interception::redirect)
    return translated_dst(socket.native_handle(), peer.address().is_v4() || peer.address().to_v6().is_v4_mapped());
  boost::system::error_code ec;
  auto local = socket.local_endpoint(ec);
  if (ec) return std::error_code(ec.value(), std::generic_category());
  return local;
}

}  // namespace airlock::proxy
