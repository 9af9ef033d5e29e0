// The reading side of the control API's streams (GET /v1/decisions, GET /v1/approvals):
// lines as they come, blocking.
#include "control/line_stream.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <boost/json/parse.hpp>

#include <cerrno>

#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>

namespace airlock::control {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using unix_socket = asio::local::stream_protocol;

bool unreserved(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
         c == '_' || c == '~';
}

}  // namespace

std::string percent_encoded(std::string_view s) {
  static constexpr char hex[] = "0123456789ABCDEF";
  std::string out;
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (unreserved(c)) {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

namespace {

// The daemon's {"error": ...} when it refused, else the body as it came.
std::string refusal_text(const std::string& body) {
  boost::system::error_code ec;
  const auto v = boost::json::parse(body, ec);
  if (!ec && v.is_object())
    if (const auto* e = v.as_object().if_contains("error"); e && e->is_string()) return std::string(e->as_string());
  return body;
}

}  // namespace

base::result<void> stream_lines(const std::string& socket_path, const std::string& target,
                                std::chrono::seconds silence_limit,
                                const std::function<bool(std::string_view)>& on_line, const stream_watch& also) {
  asio::io_context io;
  unix_socket::socket s(io);
  boost::system::error_code ec;
  s.connect(unix_socket::endpoint(socket_path), ec);
  if (ec) return base::fail<void>("cannot reach the airlock daemon at " + socket_path + ": " + ec.message());
  timeval limit{static_cast<time_t>(silence_limit.count()), 0};
  ::setsockopt(s.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
  ::setsockopt(s.native_handle(), SOL_SOCKET, SO_SNDTIMEO, &limit, sizeof limit);

  http::request<http::string_body> req{http::verb::get, target, 11};
  req.set(http::field::host, "airlock");
  req.keep_alive(false);
  http::write(s, req, ec);
  if (ec) return base::fail<void>("control API " + socket_path + ": " + ec.message());

  beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  parser.body_limit(boost::none);  // a stream has no end; each line is bounded below
  http::read_header(s, buffer, parser, ec);
  if (ec) return base::fail<void>("control API " + socket_path + ": " + ec.message());
  if (parser.get().result() != http::status::ok) {
    parser.body_limit(64 * 1024);
    http::read(s, buffer, parser, ec);
    return base::fail<void>("daemon refused (" + std::to_string(parser.get().result_int()) +
                            "): " + refusal_text(parser.get().body()));
  }

  // Chunks carry whole lines in practice; nothing relies on it.
  std::string pending;
  bool stopped = false;
  constexpr std::size_t line_limit = 1 << 20;
  auto on_chunk = [&](std::uint64_t, beast::string_view body, boost::system::error_code& chunk_ec) -> std::size_t {
    pending.append(body.data(), body.size());
    std::size_t start = 0;
    for (auto nl = pending.find('\n'); nl != std::string::npos && !stopped; nl = pending.find('\n', start)) {
      const std::string_view line(pending.data() + start, nl - start);
      start = nl + 1;
      if (!line.empty() && !on_line(line)) stopped = true;
    }
    pending.erase(0, start);
    if (pending.size() > line_limit) chunk_ec = http::error::body_limit;
    if (stopped) chunk_ec = asio::error::operation_aborted;
    return body.size();
  };
  parser.on_chunk_body(on_chunk);
  parser.eager(true);
  for (;;) {
    // What the buffer holds is parsed first; only a parser that needs more waits for bytes.
    while (buffer.size() > 0) {
      const auto used = parser.put(buffer.data(), ec);
      buffer.consume(used);
      if (stopped) return {};
      if (ec == http::error::need_more) {
        ec = {};
        break;
      }
      if (ec) return base::fail<void>("control API " + socket_path + ": " + ec.message());
      if (parser.is_done()) return base::fail<void>("the daemon at " + socket_path + " ended the stream");
      if (used == 0) break;
    }
    if (also.fd >= 0) {
      // Waiting for the daemon's next bytes: the other descriptor is watched meanwhile.
      pollfd p[2] = {{s.native_handle(), POLLIN, 0}, {also.fd, POLLIN, 0}};
      const int n = ::poll(p, 2, static_cast<int>(silence_limit.count() * 1000));
      if (n < 0 && errno == EINTR) continue;
      if (n > 0 && p[1].revents != 0) {
        if (!also.ready()) return {};
        if (p[0].revents == 0) continue;
      }
    }
    const auto got = s.read_some(buffer.prepare(16 * 1024), ec);
    buffer.commit(got);
    if (ec == asio::error::would_block || ec == asio::error::try_again)
      return base::fail<void>("the daemon at " + socket_path + " said nothing for " +
                              std::to_string(silence_limit.count()) + " s (it sends a heartbeat every 10 s)");
    if (ec == asio::error::eof || ec == asio::error::connection_reset)
      return base::fail<void>("the daemon at " + socket_path + " ended the stream (it stopped or restarted)");
    if (ec) return base::fail<void>("control API " + socket_path + ": " + ec.message());
  }
}

}  // namespace airlock::control
