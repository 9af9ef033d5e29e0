#pragma once
// The DNS listeners. UDP: one receive loop per socket; a datagram that can be answered at
// once (a cache hit, a denial) is answered in the loop, without a coroutine of its own;
// one that must wait (the upstream) gets its own coroutine, so a slow upstream never holds
// up other clients. TCP (RFC 7766): length-framed queries, several per connection, answered
// in order, with an idle deadline, caps on open connections (in all and per session) and
// on queries per connection; every end that leaves a query unanswered writes a line.
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
  // Between and within queries, and for a reply to be taken by the client.
  std::chrono::steady_clock::duration idle = std::chrono::seconds(10);
  std::size_t max_connections = 256;  // open at once on one listener
  // Per session on one listener (0: none): one sandbox cannot take every place.
  std::size_t max_connections_per_session = 16;
  std::size_t max_queries_per_connection = 1000;
};

// Accepts on `acceptor` until it is closed (dns/tcp_server.cpp).
boost::asio::awaitable<void> serve_tcp(boost::asio::ip::tcp::acceptor& acceptor, query_context& ctx, tcp_limits limits);

}  // namespace airlock::dns
