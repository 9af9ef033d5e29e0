#include "proxy/sniff.hpp"

#include "base/deadline.hpp"
#include "base/deadline_watch.hpp"
#include "proxy/edge_wait.hpp"
#include "proxy/first_message.hpp"
#include "proxy/http_head.hpp"

#include <algorithm>
#include <array>
#include <cerrno>
#include <span>
#include <tuple>
#include <utility>

#include <sys/socket.h>

namespace airlock::proxy {
namespace {

namespace asio = boost::asio;
using policy::reason;

// Above both parsers' caps, so they, not the buffer, say "too large".
constexpr std::size_t max_first_bytes = http_head::default_max_size + 1024;

// One read that does not wait (MSG_DONTWAIT: the accepted socket may still be blocking):
// would_block when nothing is queued yet.
std::tuple<boost::system::error_code, std::size_t> read_now(asio::ip::tcp::socket& s, std::span<std::byte> into) {
  for (;;) {
    const auto n = ::recv(s.native_handle(), into.data(), into.size(), MSG_DONTWAIT);
    if (n > 0) return {boost::system::error_code{}, static_cast<std::size_t>(n)};
    if (n == 0) return {asio::error::eof, 0};
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return {asio::error::would_block, 0};
    return {{errno, boost::system::system_category()}, 0};
  }
}

}  // namespace

asio::awaitable<sniffed> sniff(asio::ip::tcp::socket& client, std::chrono::steady_clock::duration limit,
                               std::optional<std::chrono::steady_clock::duration> quiet_limit) {
  std::vector<std::byte> bytes;
  // For the whole of it, a quiet start included; most first messages are whole by the
  // accept, so it is watched only from the first wait.
  base::cancel_after_first_wait deadline(client, limit);
  std::array<std::byte, 4096> chunk;
  // Most clients have spoken by the time they are accepted: the first read is tried at
  // once, with no wait and no asking first how much is queued.
  auto first = read_now(client, chunk);
  if (std::get<0>(first) == asio::error::would_block) {
    deadline.arm();
    found_empty(client);  // the read below waits for the bytes without trying first
    if (quiet_limit) {
      const base::cancel_after quiet(client, *quiet_limit);
      co_await client.async_wait(asio::ip::tcp::socket::wait_read, base::nothrow);
      if (quiet.passed() && !deadline.passed()) {
        sniffed s;
        s.type = sniffed::kind::opaque;
        s.silent = true;
        co_return s;
      }
    }
    first = {};  // nothing read: the loop reads
  }
  bool have_first = std::get<0>(first) || std::get<1>(first) > 0;
  first_message_tracker framing;
  while (!deadline.passed()) {
    if (!have_first) deadline.arm();
    auto [ec, n] = std::exchange(have_first, false)
                       ? first
                       : co_await client.async_read_some(asio::buffer(chunk), base::nothrow);
    bytes.insert(bytes.end(), chunk.begin(), chunk.begin() + static_cast<std::ptrdiff_t>(n));
    if (deadline.passed()) break;
    if (ec && ec != asio::error::eof) co_return failed_as(bytes, reason::truncated);
    const bool at_eof = ec == asio::error::eof;
    // Full parses only when the framing says a verdict may be ready (A1: flat CPU for
    // a client that sends one byte per segment).
    if (at_eof || framing.maybe_complete(bytes))
      if (auto s = classify_first_bytes(bytes, at_eof)) co_return std::move(*s);
    if (bytes.size() >= max_first_bytes) co_return failed_as(bytes, reason::too_large);
  }
  // A stalled TLS record is still TLS: refused with an alert, and logged as tls.
  const bool looks_tls = !bytes.empty() && bytes.front() == std::byte{0x16};
  co_return failed_as(bytes, reason::timeout, looks_tls ? sniffed::kind::tls : sniffed::kind::unknown);
}

}  // namespace airlock::proxy
