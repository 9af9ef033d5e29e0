#pragma once
// The DNS listener: one receive loop per UDP socket; each datagram becomes its own
// query coroutine, so a slow upstream never holds up other clients.
#include "dns/query.hpp"

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/udp.hpp>

namespace airlock::dns {

// Serves `socket` until it is closed.
boost::asio::awaitable<void> serve_udp(boost::asio::ip::udp::socket& socket, query_context& ctx);

}  // namespace airlock::dns
