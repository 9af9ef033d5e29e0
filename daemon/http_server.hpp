#pragma once
// A small HTTP/1.1 server for the daemon's own endpoints: the control API on a unix
// socket and the admin listener (/metrics, /healthz) on TCP. Requests are answered on
// the daemon's event loop by a plain function; bounded in size, time and connections,
// because an admin port must not be a way to exhaust the proxy.
#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/local/stream_protocol.hpp>

#include <chrono>
#include <cstddef>
#include <functional>
#include <string>

namespace airlock::daemon {

struct http_request {
  std::string method;  // GET, POST, PUT, DELETE...
  std::string target;  // path and query as sent
  std::string body;
};

struct http_response {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
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
