#pragma once
// The bytes of a served connection's messages (proxy/http_exchange.cpp): a body streamed
// piece by piece behind its head, and after a switch of protocols the bytes both ways as
// they come. Nothing is held whole: each direction moves through one piece of memory.
#include "base/deadline.hpp"
#include "proxy/limits.hpp"
#include "proxy/secret_mask.hpp"

#include <boost/asio/awaitable.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/stream_traits.hpp>
#include <boost/beast/http/buffer_body.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/serializer.hpp>
#include <boost/beast/http/write.hpp>

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

namespace airlock::proxy::http_bodies {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using base::nothrow;

// Body bytes move through this much memory per direction, whatever their size.
constexpr std::size_t piece_size = 16 * 1024;

// Copies one message's body from `from` to `to` behind a header already written by `sr`,
// piece by piece as it arrives (an event stream is not held back), with the secrets of
// `mask` masked across piece boundaries. Each piece restarts both sides' idle deadline: a
// transfer that keeps moving is never cut. A TLS peer that closes without close_notify ends
// a body that runs to the close the way a clean close would.
template <bool IsRequest, typename From, typename To>
asio::awaitable<bool> relay_body(From& from, beast::flat_buffer& buf, http::parser<IsRequest, http::buffer_body>& p,
                                 To& to, http::serializer<IsRequest, http::buffer_body>& sr, const secret_mask& mask,
                                 std::chrono::steady_clock::duration idle, std::uint64_t& moved,
                                 limiter::ticket& ticket, bool& cut) {
  std::array<char, piece_size> piece{};
  std::string pending;  // masked bytes not yet sent (their tail may be the start of a secret)
  do {
    beast::get_lowest_layer(from).expires_after(idle);
    beast::get_lowest_layer(to).expires_after(idle);
    if (!p.is_done()) {
      p.get().body().data = piece.data();
      p.get().body().size = piece.size();
      auto [ec, n] = co_await http::async_read_some(from, buf, p, nothrow);
      if (ec == http::error::need_buffer) ec = {};
      if (ec == asio::ssl::error::stream_truncated && p.need_eof()) p.put_eof(ec);
      if (ec) co_return false;
      pending.append(piece.data(), piece.size() - p.get().body().size);
      mask.apply(pending);
    }
    const bool last = p.is_done();
    const std::size_t hold = mask.hold();
    const std::size_t send = last ? pending.size() : (pending.size() > hold ? pending.size() - hold : 0);
    std::string out = pending.substr(0, send);
    pending.erase(0, send);
    p.get().body().data = out.empty() ? nullptr : out.data();
    p.get().body().size = out.size();
    p.get().body().more = !last;
    auto [wec, wn] = co_await http::async_write(to, sr, nothrow);
    if (wec == http::error::need_buffer) wec = {};
    if (wec) co_return false;
    moved += out.size();
    if (!ticket.moved(IsRequest, out.size())) {
      cut = true;
      co_return false;
    }
  } while (!p.is_done() || !sr.is_done());
  co_return true;
}

// One way of a connection whose protocol switched (a 101 on a port that carries `any`):
// what the parser had read ahead first, then the bytes as they come, until the peer
// closes (passed on as a half-close), a write fails, the idle limit passes or a budget ends.
template <typename From, typename To>
asio::awaitable<void> switched_way(From& from, beast::flat_buffer& ahead, To& to,
                                   std::chrono::steady_clock::duration idle, std::uint64_t& moved, bool up,
                                   limiter::ticket& ticket, bool& cut) {
  std::array<char, piece_size> piece{};
  // A spent budget ends both ways at once: the other way's wait is cancelled too.
  auto cut_both = [&] {
    cut = true;
    beast::get_lowest_layer(from).cancel();
    beast::get_lowest_layer(to).cancel();
  };
  if (ahead.size() > 0) {
    auto [ec, n] = co_await asio::async_write(to, ahead.data(), nothrow);
    moved += n;
    ahead.consume(n);
    if (!ec && !ticket.moved(up, n)) cut_both();
    if (ec || cut) co_return;
  }
  for (;;) {
    beast::get_lowest_layer(from).expires_after(idle);
    auto [rerr, n] = co_await from.async_read_some(asio::buffer(piece), nothrow);
    if (rerr) break;
    beast::get_lowest_layer(to).expires_after(idle);
    auto [wec, wn] = co_await asio::async_write(to, asio::buffer(piece.data(), n), nothrow);
    moved += wn;
    if (wec) co_return;
    if (!ticket.moved(up, wn)) {
      cut_both();
      co_return;
    }
    if (cut) co_return;  // the other way spent the budget
  }
  boost::system::error_code ignored;
  beast::get_lowest_layer(to).socket().shutdown(asio::ip::tcp::socket::shutdown_send, ignored);
}

template <typename Client, typename Upstream>
asio::awaitable<void> relay_switched(Client& client, beast::flat_buffer& from_client, Upstream& upstream,
                                     beast::flat_buffer& from_upstream, std::chrono::steady_clock::duration idle,
                                     std::uint64_t& up, std::uint64_t& down, limiter::ticket& ticket, bool& cut) {
  using namespace asio::experimental::awaitable_operators;
  co_await (switched_way(client, from_client, upstream, idle, up, true, ticket, cut) &&
            switched_way(upstream, from_upstream, client, idle, down, false, ticket, cut));
}

}  // namespace airlock::proxy::http_bodies
