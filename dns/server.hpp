#pragma once
// The DNS listeners. UDP: one receive loop per socket; a datagram that can be answered at
// once (a cache hit, a denial) is answered in the loop, without a coroutine of its own;
// one that must wait (the upstream) gets its own coroutine, so a slow upstream never holds
// up other clients. TCP (RFC 7766): length-
// framed queries, several per connection, answered in order, with an idle deadline and a
// cap on open connections.
#include "dns/query.hpp"

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ip/udp.hpp>

#include <chrono>
#include <cstddef>

namespace airlock::dns {

// Serves `socket` until it is closed.
boost::asio::awaitable<void> serve_udp(boost::asio::ip::udp::socket& socket, query_context& ctx);

struct tcp_limits {
  std::chrono::steady_clock::duration idle = std::chrono::seconds(10);  // between and within queries
  std::size_t max_connections = 256;
  std::size_t max_queries_per_connection = 1000;
};

// Accepts on `acceptor` until it is closed.
boost::asio::awaitable<void> serve_tcp(boost::asio::ip::tcp::acceptor& acceptor, query_context& ctx, tcp_limits limits);

}  // namespace airlock::dns
