#pragma once
// The bidirectional copy once a connection is allowed: half-close is passed on (FIN one
// way does not end the other), an idle watchdog ends connections where nothing moves,
// and the byte counts end up in the decision line.
#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <chrono>
#include <cstdint>

namespace airlock::proxy {

struct relay_totals {
  std::uint64_t up = 0;    // client -> upstream
  std::uint64_t down = 0;  // upstream -> client
  bool idle_timeout = false;
};

boost::asio::awaitable<relay_totals> relay(boost::asio::ip::tcp::socket& client, boost::asio::ip::tcp::socket& upstream,
                                           std::chrono::steady_clock::duration idle_limit);

}  // namespace airlock::proxy
