#pragma once
// Reads the client's first bytes until they name a host: a TLS ClientHello (SNI) or an
// HTTP/1 request head (Host). Bounded in size and, as a whole, in time: a client that
// dribbles a byte at a time still meets the same absolute deadline.
#include "proxy/first_bytes.hpp"

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace airlock::proxy {

// `quiet_limit`: a client that sends nothing at all for that long is waiting for the server
// to speak first (SMTP, MySQL, FTP...): it is opaque TCP, judged by address alone, and
// relayed without waiting out `limit`. Absent: silence ends in `timeout` like a stalled hello.
boost::asio::awaitable<sniffed> sniff(boost::asio::ip::tcp::socket& client, std::chrono::steady_clock::duration limit,
                                      std::optional<std::chrono::steady_clock::duration> quiet_limit = std::nullopt);

}  // namespace airlock::proxy
