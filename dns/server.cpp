#include "dns/server.hpp"

#include "core/deadline.hpp"
#include "core/spawn.hpp"

#include <boost/asio/read.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/write.hpp>

#include <array>
#include <cstdio>
#include <memory>
#include <vector>

namespace airlock::dns {
namespace {

namespace asio = boost::asio;
using asio::ip::tcp;
using asio::ip::udp;

void report(const char* what) { std::fprintf(stderr, "airlock: dns query: internal error: %s\n", what); }

asio::awaitable<void> answer_datagram(udp::socket& socket, query_context& ctx, std::vector<std::byte> packet,
                                      udp::endpoint client) {
  auto reply = co_await answer_query(ctx, packet, client.address(), client.port(), true);
  if (!reply) co_return;
  // A failed send (client gone, ICMP unreachable) concerns this client only.
  co_await socket.async_send_to(asio::buffer(*reply), client, core::nothrow);
}

// Reads exactly buffer.size() bytes within `limit`; false on EOF, error or timeout.
asio::awaitable<bool> read_exactly(tcp::socket& s, asio::mutable_buffer buffer, std::chrono::steady_clock::duration limit) {
  auto read = [&]() -> asio::awaitable<bool> {
    auto [ec, n] = co_await asio::async_read(s, buffer, core::nothrow);
    co_return !ec && n == buffer.size();
  };
  auto ok = co_await core::with_deadline(read(), limit);
  co_return ok && *ok;
}

asio::awaitable<void> tcp_connection(tcp::socket socket, query_context& ctx, tcp_limits limits,
                                     std::shared_ptr<std::size_t> open) {
  struct count {
    std::shared_ptr<std::size_t> n;
    ~count() { --*n; }
  } guard{open};
  boost::system::error_code ec;
  const auto peer = socket.remote_endpoint(ec);
  if (ec) co_return;
  std::vector<std::byte> packet;
  for (std::size_t q = 0; q < limits.max_queries_per_connection; ++q) {
    std::array<std::uint8_t, 2> length{};
    if (!co_await read_exactly(socket, asio::buffer(length), limits.idle)) co_return;
    const std::size_t size = std::size_t{length[0]} << 8 | length[1];
    if (size == 0) co_return;  // nothing to answer; a client that sends this is confused
    packet.resize(size);
    if (!co_await read_exactly(socket, asio::buffer(packet), limits.idle)) co_return;
    auto reply = co_await answer_query(ctx, packet, peer.address(), peer.port(), false);
    if (!reply) continue;
    const std::array<std::uint8_t, 2> out_length{static_cast<std::uint8_t>(reply->size() >> 8),
                                                 static_cast<std::uint8_t>(reply->size() & 0xff)};
    const std::array<asio::const_buffer, 2> out{asio::buffer(out_length), asio::buffer(*reply)};
    auto [wec, wn] = co_await asio::async_write(socket, out, core::nothrow);
    if (wec) co_return;
  }
}

}  // namespace

asio::awaitable<void> serve_udp(udp::socket& socket, query_context& ctx) {
  auto ex = co_await asio::this_coro::executor;
  std::vector<std::byte> buffer(65536);
  for (;;) {
    udp::endpoint client;
    auto [ec, n] = co_await socket.async_receive_from(asio::buffer(buffer), client, core::nothrow);
    if (ec == asio::error::operation_aborted || !socket.is_open()) co_return;
    if (ec) continue;  // e.g. ICMP errors surfaced on the socket: not fatal to the listener
    std::vector<std::byte> packet(buffer.begin(), buffer.begin() + static_cast<std::ptrdiff_t>(n));
    core::spawn_session(ex, answer_datagram(socket, ctx, std::move(packet), client), report);
  }
}

asio::awaitable<void> serve_tcp(tcp::acceptor& acceptor, query_context& ctx, tcp_limits limits) {
  auto ex = co_await asio::this_coro::executor;
  auto open = std::make_shared<std::size_t>(0);
  for (;;) {
    auto [ec, socket] = co_await acceptor.async_accept(core::nothrow);
    if (ec == asio::error::operation_aborted || !acceptor.is_open()) co_return;
    if (ec) {
      // EMFILE and friends: pause instead of spinning on a listener that cannot accept.
      asio::steady_timer pause(ex, std::chrono::milliseconds(50));
      co_await pause.async_wait(core::nothrow);
      continue;
    }
    if (*open >= limits.max_connections) continue;  // closed by going out of scope; UDP still serves
    ++*open;
    core::spawn_session(ex, tcp_connection(std::move(socket), ctx, limits, open), report);
  }
}

}  // namespace airlock::dns
