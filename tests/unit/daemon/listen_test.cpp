// daemon::listen_tcp on loopback: accepted sockets inherit TCP_NODELAY (IPv4 and IPv6), a
// SO_REUSEPORT group cannot be opened on a port somebody already listens on but can be
// joined by the loops of the airlock that opened it, [::] and 0.0.0.0 share a port number,
// and a TPROXY listener is transparent.
#include "daemon/listen.hpp"

#include <boost/asio/io_context.hpp>

#include <doctest/doctest.h>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

namespace {

namespace asio = boost::asio;
using asio::ip::tcp;
using airlock::daemon::listen_tcp;
using airlock::daemon::port_use;

int int_option(int fd, int level, int name) {
  int value = -1;
  socklen_t len = sizeof value;
  REQUIRE(::getsockopt(fd, level, name, &value, &len) == 0);
  return value;
}

// Connects to the listener and returns the accepted socket's TCP_NODELAY.
int accepted_no_delay(asio::io_context& io, tcp::acceptor& listener) {
  tcp::socket client(io);
  client.connect(listener.local_endpoint());
  listener.non_blocking(true);  // the connection is queued by now: never wait here
  tcp::socket accepted(io);
  boost::system::error_code ec;
  listener.accept(accepted, ec);
  REQUIRE_FALSE(ec);
  CHECK(int_option(client.native_handle(), IPPROTO_TCP, TCP_NODELAY) == 0);  // what a socket has by default
  return int_option(accepted.native_handle(), IPPROTO_TCP, TCP_NODELAY);
}

}  // namespace

TEST_CASE("listen_tcp: an accepted socket inherits TCP_NODELAY from its listener, IPv4 and IPv6") {
  asio::io_context io;
  for (const char* address : {"127.0.0.1", "::1"}) {
    CAPTURE(address);
    tcp::acceptor a(io);
    REQUIRE_FALSE(listen_tcp(a, tcp::endpoint(asio::ip::make_address(address), 0)));
    CHECK(accepted_no_delay(io, a) != 0);
  }
}

TEST_CASE("listen_tcp: a port group cannot be opened where somebody listens, and is joined by its own loops") {
  asio::io_context io;
  const auto loopback = asio::ip::make_address("127.0.0.1");
  tcp::acceptor somebody(io);
  REQUIRE_FALSE(listen_tcp(somebody, tcp::endpoint(loopback, 0)));
  const auto taken = somebody.local_endpoint().port();
  tcp::acceptor second(io);
  CHECK(listen_tcp(second, tcp::endpoint(loopback, taken), port_use::opens_group) == asio::error::address_in_use);
  CHECK_FALSE(second.is_open());

  tcp::acceptor first_loop(io);
  REQUIRE_FALSE(listen_tcp(first_loop, tcp::endpoint(loopback, 0), port_use::opens_group));
  const auto group = first_loop.local_endpoint().port();
  tcp::acceptor other_loop(io);
  CHECK_FALSE(listen_tcp(other_loop, tcp::endpoint(loopback, group), port_use::joins_group));
  tcp::acceptor another_daemon(io);
  CHECK(listen_tcp(another_daemon, tcp::endpoint(loopback, group), port_use::opens_group) ==
        asio::error::address_in_use);
}

TEST_CASE("listen_tcp: [::] takes IPv6 only, so 0.0.0.0 and [::] may both be listed on one port") {
  asio::io_context io;
  tcp::acceptor v4(io);
  REQUIRE_FALSE(listen_tcp(v4, tcp::endpoint(asio::ip::address_v4::any(), 0)));
  tcp::acceptor v6(io);
  CHECK_FALSE(listen_tcp(v6, tcp::endpoint(asio::ip::address_v6::any(), v4.local_endpoint().port())));
  CHECK(int_option(v6.native_handle(), IPPROTO_IPV6, IPV6_V6ONLY) == 1);
}

TEST_CASE("listen_tcp: a TPROXY listener is transparent in its own family (needs CAP_NET_ADMIN)") {
  asio::io_context io;
  tcp::acceptor v4(io);
  REQUIRE_FALSE(listen_tcp(v4, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0), port_use::alone, true));
  CHECK(int_option(v4.native_handle(), SOL_IP, IP_TRANSPARENT) == 1);
  tcp::acceptor v6(io);
  REQUIRE_FALSE(listen_tcp(v6, tcp::endpoint(asio::ip::make_address("::1"), 0), port_use::alone, true));
  CHECK(int_option(v6.native_handle(), SOL_IPV6, IPV6_TRANSPARENT) == 1);
  tcp::acceptor plain(io);
  REQUIRE_FALSE(listen_tcp(plain, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0)));
  CHECK(int_option(plain.native_handle(), SOL_IP, IP_TRANSPARENT) == 0);
}
