// HTTP/1.1 for requests mode: one GET with Connection: close, the whole response read.
// The body is counted, not kept, so a large page costs no memory per connection.
#include "base/deadline.hpp"
#include "bench/loadgen/fetch.hpp"

#include <boost/asio/read_until.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/write.hpp>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <optional>
#include <string_view>

namespace airlock::bench {

namespace {

namespace asio = boost::asio;
using base::nothrow;

// A head longer than this is not a page server's answer.
constexpr std::size_t max_head = 64 * 1024;

std::optional<std::size_t> content_length(std::string_view head) {
  std::string lower(head);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](char c) { return static_cast<char>(std::tolower(static_cast<unsigned char>(c))); });
  const auto at = lower.find("\r\ncontent-length:");
  if (at == std::string::npos) return std::nullopt;
  const char* from = lower.c_str() + at + 17;
  while (*from == ' ' || *from == '\t') ++from;
  std::size_t length = 0;
  const auto [end, ec] = std::from_chars(from, lower.c_str() + lower.size(), length);
  if (ec != std::errc{}) return std::nullopt;
  return length;
}

// The end of a body that runs to the end of the connection. A server that closes without
// close_notify (stream_truncated) is taken at its word too: this counts bytes, it does not
// vouch for them, and many servers skip the alert.
bool is_end_of_stream(const boost::system::error_code& ec) {
  return ec == asio::error::eof || ec == asio::ssl::error::stream_truncated;
}

}  // namespace

asio::awaitable<response> fetch_http1(tls_stream& stream, const std::string& host, const std::string& path) {
  response r;
  const std::string request = "GET " + path + " HTTP/1.1\r\nHost: " + host + "\r\nConnection: close\r\n\r\n";
  if (auto [ec, n] = co_await asio::async_write(stream, asio::buffer(request), nothrow); ec) {
    r.problem = "request: " + ec.message();
    co_return r;
  }

  std::string buffer;
  auto [ec, head_size] = co_await asio::async_read_until(stream, asio::dynamic_buffer(buffer, max_head), "\r\n\r\n",
                                                         nothrow);
  if (ec) {
    r.problem = "response head: " + ec.message();
    co_return r;
  }
  const std::string_view head(buffer.data(), head_size);
  // "HTTP/1.1 200 OK": the code is the three characters after the version.
  if (!head.starts_with("HTTP/1.") || head.size() < 12 || head.substr(8, 4) != " 200") {
    r.bad_status = true;
    r.problem = "status: " + std::string(head.substr(0, head.find('\r')));
    co_return r;
  }

  // Without Content-Length (chunked, or close-delimited) the body runs to EOF; a chunked
  // body is then counted with its chunk framing.
  const auto length = content_length(head);
  r.body_bytes = buffer.size() - head_size;
  std::array<char, 16 * 1024> sink{};
  while (!length || r.body_bytes < *length) {
    auto [read_ec, n] = co_await stream.async_read_some(asio::buffer(sink), nothrow);
    r.body_bytes += n;
    if (!read_ec) continue;
    if (!length && is_end_of_stream(read_ec)) break;
    r.problem = "response body: " + read_ec.message();
    co_return r;
  }
  if (length && r.body_bytes > *length) r.problem = "more body than its Content-Length";
  co_return r;
}

}  // namespace airlock::bench
