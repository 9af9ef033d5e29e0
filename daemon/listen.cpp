#include "daemon/listen.hpp"

#include <boost/asio/ip/v6_only.hpp>
#include <boost/asio/socket_base.hpp>

#include <netinet/in.h>
#include <sys/socket.h>

namespace airlock::daemon {
namespace {

namespace asio = boost::asio;
using asio::ip::tcp;

// An int option turned on, as Asio's public SettableSocketOption concept has it (Asio's own
// boolean option is in its detail namespace).
template <int Level, int Name>
struct turned_on {
  int value = 1;
  template <typename Protocol>
  int level(const Protocol&) const {
    return Level;
  }
  template <typename Protocol>
  int name(const Protocol&) const {
    return Name;
  }
  template <typename Protocol>
  const void* data(const Protocol&) const {
    return &value;
  }
  template <typename Protocol>
  std::size_t size(const Protocol&) const {
    return sizeof value;
  }
};

using reuse_port = turned_on<SOL_SOCKET, SO_REUSEPORT>;

// TPROXY delivers connections addressed elsewhere only to sockets marked transparent.
using ip_transparent = turned_on<SOL_IP, IP_TRANSPARENT>;
using ipv6_transparent = turned_on<SOL_IPV6, IPV6_TRANSPARENT>;

template <typename Socket, typename Endpoint>
boost::system::error_code bind_socket(Socket& s, const Endpoint& ep, bool shared = false, bool transparent = false) {
  boost::system::error_code ec;
  s.open(ep.protocol(), ec);
  if (!ec) s.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec && shared) s.set_option(reuse_port{}, ec);
  if (!ec && transparent) {
    if (ep.address().is_v6()) s.set_option(ipv6_transparent{}, ec);
    else s.set_option(ip_transparent{}, ec);
  }
  // [::] and 0.0.0.0 may both be listed; each takes its own family only.
  if (!ec && ep.address().is_v6()) s.set_option(asio::ip::v6_only(true), ec);
  if (!ec) s.bind(ep, ec);
  if (ec) {
    boost::system::error_code ignored;
    s.close(ignored);
  }
  return ec;
}

}  // namespace

boost::system::error_code bind_udp(asio::ip::udp::socket& s, const asio::ip::udp::endpoint& ep) {
  return bind_socket(s, ep);
}

boost::system::error_code listen_tcp(tcp::acceptor& a, const tcp::endpoint& ep, port_use use, bool transparent) {
  const bool shared = use != port_use::alone;
  if (use == port_use::opens_group && ep.port() != 0) {
    // SO_REUSEPORT would also let a second airlock (or anything of the same user) join the
    // port and take half the connections: first make sure nobody listens there yet.
    tcp::acceptor probe(a.get_executor());
    if (auto ec = bind_socket(probe, ep)) return ec;
  }
  auto ec = bind_socket(a, ep, shared, transparent);
  // Accepted sockets inherit it: a relay must not add Nagle's delay to a client's small
  // writes, and one setsockopt here spares one per connection.
  if (!ec) a.set_option(tcp::no_delay(true), ec);
  if (!ec) a.listen(asio::socket_base::max_listen_connections, ec);
  return ec;
}

}  // namespace airlock::daemon
