#include "control/decision_tail.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <boost/json/parse.hpp>

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

// The daemon's {"error": ...} when it refused, else the body as it came.
std::string refusal_text(const std::string& body) {
  boost::system::error_code ec;
  const auto v = boost::json::parse(body, ec);
  if (!ec && v.is_object())
    if (const auto* e = v.as_object().if_contains("error"); e && e->is_string()) return std::string(e->as_string());
  return body;
}

}  // namespace

std::string decisions_target(const tail_request& r) {
  std::string t = "/v1/decisions";
  char sep = '?';
  if (!r.session.empty()) {
    t += sep + std::string("session=") + percent_encoded(r.session);
    sep = '&';
  }
  if (r.denials_only) t += sep + std::string("deny=1");
  return t;
}

base::result<void> tail_decisions(const tail_request& r, const std::function<bool(std::string_view)>& on_line) {
  asio::io_context io;
  unix_socket::socket s(io);
  boost::system::error_code ec;
  s.connect(unix_socket::endpoint(r.socket_path), ec);
  if (ec) return base::fail<void>("cannot reach the airlock daemon at " + r.socket_path + ": " + ec.message());
  timeval limit{static_cast<time_t>(r.silence_limit.count()), 0};
  ::setsockopt(s.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
  ::setsockopt(s.native_handle(), SOL_SOCKET, SO_SNDTIMEO, &limit, sizeof limit);

  http::request<http::string_body> req{http::verb::get, decisions_target(r), 11};
  req.set(http::field::host, "airlock");
  req.keep_alive(false);
  http::write(s, req, ec);
  if (ec) return base::fail<void>("control API " + r.socket_path + ": " + ec.message());

  beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  parser.body_limit(boost::none);  // a stream has no end; each line is bounded below
  http::read_header(s, buffer, parser, ec);
  if (ec) return base::fail<void>("control API " + r.socket_path + ": " + ec.message());
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
  while (!parser.is_done()) {
    http::read_some(s, buffer, parser, ec);
    if (stopped) return {};
    if (ec == asio::error::would_block || ec == asio::error::try_again)
      return base::fail<void>("the daemon at " + r.socket_path + " said nothing for " +
                              std::to_string(r.silence_limit.count()) + " s (it sends a heartbeat every 10 s)");
    if (ec == http::error::partial_message || ec == asio::error::eof || ec == http::error::end_of_stream)
      return base::fail<void>("the daemon at " + r.socket_path + " ended the stream (it stopped or restarted)");
    if (ec) return base::fail<void>("control API " + r.socket_path + ": " + ec.message());
  }
  return base::fail<void>("the daemon at " + r.socket_path + " ended the stream");
}

}  // namespace airlock::control
