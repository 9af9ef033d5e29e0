#include "daemon/http_server.hpp"

#include "base/deadline.hpp"
#include "base/json_string.hpp"
#include "base/spawn.hpp"

#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/chunk_encode.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>

#include <cstdio>
#include <memory>

namespace airlock::daemon {

namespace asio = boost::asio;
namespace {

namespace beast = boost::beast;
namespace http = beast::http;

// A streamed answer: the head, then each piece as a chunk until the stream ends or a write
// does not complete within the limit (a client gone, or not reading).
template <typename Socket>
asio::awaitable<void> send_stream(Socket& socket, http_response& answer, const http_limits& limits) {
  http::response<http::empty_body> res{static_cast<http::status>(answer.status), 11};
  res.set(http::field::server, "airlock");
  res.set(http::field::content_type, answer.content_type);
  res.set(http::field::cache_control, "no-store");
  res.keep_alive(false);
  res.chunked(true);
  http::response_serializer<http::empty_body> head{res};
  auto written = co_await base::with_deadline(http::async_write_header(socket, head, base::nothrow), limits.read_limit);
  if (!written || std::get<0>(*written)) co_return;
  for (;;) {
    // The client says nothing after its request: bytes or an end from it mean it is done
    // (gone, or breaking the protocol), and the stream ends now, not at its next write.
    using namespace asio::experimental::awaitable_operators;
    auto next = co_await (answer.stream->next() || socket.async_wait(Socket::wait_read, base::nothrow));
    if (next.index() == 1) co_return;
    auto piece = std::get<0>(std::move(next));
    if (!piece || piece->empty()) {
      co_await base::with_deadline(asio::async_write(socket, http::make_chunk_last(), base::nothrow),
                                   limits.read_limit);
      co_return;
    }
    auto sent = co_await base::with_deadline(
        asio::async_write(socket, http::make_chunk(asio::buffer(*piece)), base::nothrow), limits.read_limit);
    if (!sent || std::get<0>(*sent)) co_return;
  }
}

// One connection: read a request, answer it, until the peer closes, stays silent past
// the limit, or asks to close.
template <typename Socket>
asio::awaitable<void> serve_connection(Socket socket, std::shared_ptr<const http_handler> handler, http_limits limits) {
  beast::flat_buffer buffer(16 * 1024);
  for (;;) {
    http::request_parser<http::string_body> parser;
    parser.header_limit(16 * 1024);
    parser.body_limit(limits.max_body);
    auto read = co_await base::with_deadline(http::async_read(socket, buffer, parser, base::nothrow),
                                             limits.read_limit);
    if (!read) co_return;  // silent too long
    auto [ec, n] = *read;
    http_response answer;
    bool keep_alive = false;
    if (ec == http::error::end_of_stream || ec == asio::error::eof || ec == asio::error::connection_reset) co_return;
    if (ec == http::error::body_limit) {
      answer = json_error(413, "request body larger than " + std::to_string(limits.max_body) + " bytes");
    } else if (ec) {
      answer = json_error(400, "bad request: " + ec.message());
    } else {
      const auto& req = parser.get();
      keep_alive = req.keep_alive();
      http_request r{std::string(req.method_string()), std::string(req.target()), req.body()};
      try {
        answer = (*handler)(r);
      } catch (const std::exception& e) {
        answer = json_error(500, std::string("internal error: ") + e.what());
      }
    }
    if (answer.stream) {
      co_await send_stream(socket, answer, limits);
      co_return;
    }
    http::response<http::string_body> res{static_cast<http::status>(answer.status), 11};
    res.set(http::field::server, "airlock");
    res.set(http::field::content_type, answer.content_type);
    res.keep_alive(keep_alive);
    res.body() = std::move(answer.body);
    res.prepare_payload();
    auto written = co_await base::with_deadline(http::async_write(socket, res, base::nothrow), limits.read_limit);
    if (!written || std::get<0>(*written) || !keep_alive) co_return;
  }
}

template <typename Acceptor>
asio::awaitable<void> accept_loop(Acceptor& acceptor, http_handler handler, http_limits limits) {
  auto shared = std::make_shared<const http_handler>(std::move(handler));
  auto open = std::make_shared<std::size_t>(0);
  for (;;) {
    auto [ec, socket] = co_await acceptor.async_accept(base::nothrow);
    if (ec == asio::error::operation_aborted || !acceptor.is_open()) co_return;
    if (ec) {
      asio::steady_timer pause(acceptor.get_executor(), std::chrono::milliseconds(50));
      co_await pause.async_wait(base::nothrow);
      continue;
    }
    if (*open >= limits.max_connections) continue;  // closes it: the admin side never starves the proxy
    ++*open;
    base::spawn_session(
        acceptor.get_executor(),
        [](auto s, auto h, http_limits l, std::shared_ptr<std::size_t> count) -> asio::awaitable<void> {
          struct release {
            std::shared_ptr<std::size_t> c;
            ~release() { --*c; }
          } guard{count};
          co_await serve_connection(std::move(s), std::move(h), l);
        }(std::move(socket), shared, limits, open),
        [](const char* what) { std::fprintf(stderr, "airlock: http endpoint: internal error: %s\n", what); });
  }
}

}  // namespace

http_response json_error(int status, const std::string& message) {
  return http_response{status, "application/json", "{\"error\":" + base::json_quote(message) + "}\n"};
}

asio::awaitable<void> serve_http(asio::ip::tcp::acceptor& acceptor, http_handler handler, http_limits limits) {
  co_await accept_loop(acceptor, std::move(handler), limits);
}

asio::awaitable<void> serve_http(asio::local::stream_protocol::acceptor& acceptor, http_handler handler,
                                 http_limits limits) {
  co_await accept_loop(acceptor, std::move(handler), limits);
}

}  // namespace airlock::daemon
