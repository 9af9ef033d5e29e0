#pragma once
// One GET on a connection whose TLS handshake is done, in HTTP/1.1 or HTTP/2: the exchange
// `requests` mode makes on each new connection. Neither bounds its own time: the caller
// puts one deadline on the whole exchange.
#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/stream.hpp>

#include <cstddef>
#include <string>

namespace airlock::bench {

using tls_stream = boost::asio::ssl::stream<boost::asio::ip::tcp::socket>;

struct response {
  std::string problem;      // "" once a whole 200 response has been read
  bool bad_status = false;  // the problem is the status, not the exchange
  std::size_t body_bytes = 0;
};

// "GET path" with Connection: close; the body read by Content-Length, or to EOF without one.
boost::asio::awaitable<response> fetch_http1(tls_stream& stream, const std::string& host, const std::string& path);

// The connection preface, SETTINGS and one HEADERS on stream 1, then frames until stream 1 ends.
boost::asio::awaitable<response> fetch_http2(tls_stream& stream, const std::string& host, const std::string& path);

// GOAWAY (last stream 0, NO_ERROR) after fetch_http2: the polite end before the socket closes.
boost::asio::awaitable<void> send_goaway(tls_stream& stream);

}  // namespace airlock::bench
