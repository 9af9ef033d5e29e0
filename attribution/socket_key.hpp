// The socket to attribute, as airlock saw it from the outside: the sandbox's end and the
// destination the sandbox addressed. Pure data; no I/O.
#pragma once

#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/basic_endpoint.hpp>

#include <cstdint>
#include <string>

namespace airlock::attribution {

enum class transport : std::uint8_t { tcp, udp };

struct socket_key {
  transport proto = transport::tcp;
  boost::asio::ip::address local_address;  // the sandbox side: the client endpoint airlock saw
  std::uint16_t local_port = 0;
  boost::asio::ip::address remote_address;  // what the sandbox addressed (original dst, or DNS :53)
  std::uint16_t remote_port = 0;

  // For a connection accepted by the proxy: the client endpoint and SO_ORIGINAL_DST.
  template <typename Protocol>
  static socket_key tcp(const boost::asio::ip::basic_endpoint<Protocol>& client,
                        const boost::asio::ip::basic_endpoint<Protocol>& original_dst) {
    return make(transport::tcp, client.address(), client.port(), original_dst.address(), original_dst.port());
  }
  // For a DNS query over UDP: the client endpoint and the address:53 the sandbox sent to
  // (the gateway's DNS address, before any redirect).
  template <typename Protocol>
  static socket_key udp(const boost::asio::ip::basic_endpoint<Protocol>& client,
                        const boost::asio::ip::basic_endpoint<Protocol>& addressed) {
    return make(transport::udp, client.address(), client.port(), addressed.address(), addressed.port());
  }

  // Builds a key; IPv4-mapped IPv6 addresses (a dual-stack listener's view of an IPv4 client)
  // become plain IPv4, which is how the sandbox's own socket knows them.
  static socket_key make(transport proto, const boost::asio::ip::address& local, std::uint16_t local_port,
                         const boost::asio::ip::address& remote, std::uint16_t remote_port);

  // "tcp 198.51.100.2:40000 -> 203.0.113.10:443", for messages and tests.
  std::string to_string() const;
};

// `a` without IPv4 mapping: ::ffff:a.b.c.d becomes a.b.c.d; anything else is unchanged.
boost::asio::ip::address unmapped(const boost::asio::ip::address& a) noexcept;

}  // namespace airlock::attribution
