#pragma once
// Opening the daemon's listening sockets: every option a listener needs is set here, once,
// before bind, so that the sockets it accepts inherit them.
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ip/udp.hpp>
#include <boost/system/error_code.hpp>

namespace airlock::daemon {

// How a listening socket shares its port with the other event loops' sockets.
enum class port_use {
  alone,        // nobody else listens there
  opens_group,  // first of a SO_REUSEPORT group: fails if anybody listens there already
  joins_group,  // joins the group the first loop opened
};

// A UDP socket bound to `ep` (closed again on failure).
boost::system::error_code bind_udp(boost::asio::ip::udp::socket& s, const boost::asio::ip::udp::endpoint& ep);

// A TCP listener on `ep`. `transparent`: IP_TRANSPARENT / IPV6_TRANSPARENT, for TPROXY.
// An IPv6 address takes IPv6 only, so [::] and 0.0.0.0 may both be listed. Accepted
// sockets inherit TCP_NODELAY.
boost::system::error_code listen_tcp(boost::asio::ip::tcp::acceptor& a, const boost::asio::ip::tcp::endpoint& ep,
                                     port_use use = port_use::alone, bool transparent = false);

}  // namespace airlock::daemon
