#pragma once
// A small HTTP/1.1 server for the daemon's own endpoints: the control API on a unix
// socket and the admin listener (/metrics, /healthz) on TCP. Requests are answered on
// the daemon's event loop by a plain function; bounded in size, time and connections,
// because an admin port must not be a way to exhaust the proxy. A response may instead be a
// stream (the live decision feed): its body goes out chunked, piece by piece, for as long
// as the client reads it, each write bounded by the same limit; the client closing its end
// ends the stream at once.
#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/local/stream_protocol.hpp>

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>

namespace airlock::daemon {

struct http_request {
  std::string method;  // GET, POST, PUT, DELETE...
  std::string target;  // path and query as sent
  std::string body;
};

// A body sent as it comes: each piece is one chunk. A piece must not be empty (an empty
// chunk ends the body): a stream with nothing to say for a while sends something its
// client ignores, which also finds a client that went away.
class body_stream {
 public:
  virtual ~body_stream() = default;
  // The next piece; nothing at the end of the body.
  virtual boost::asio::awaitable<std::optional<std::string>> next() = 0;
};

struct http_response {
  http_response() = default;
  http_response(int s, std::string type, std::string b)
      : status(s), content_type(std::move(type)), body(std::move(b)) {}

  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::shared_ptr<body_stream> stream;  // set: `body` is ignored, the connection ends with the stream
};

using http_handler = std::function<http_response(const http_request&)>;

struct http_limits {
  std::size_t max_body = 64 * 1024;
  std::size_t max_connections = 32;
  std::chrono::steady_clock::duration read_limit = std::chrono::seconds(10);  // per request, idle keep-alive too
};

// Accepts until the acceptor is closed; each connection may carry several requests.
boost::asio::awaitable<void> serve_http(boost::asio::ip::tcp::acceptor& acceptor, http_handler handler,
                                        http_limits limits = {});
boost::asio::awaitable<void> serve_http(boost::asio::local::stream_protocol::acceptor& acceptor, http_handler handler,
                                        http_limits limits = {});

// A JSON error body: {"error": "..."}.
http_response json_error(int status, const std::string& message);

}  // namespace airlock::daemon
