#include "dns/server.hpp"

#include "core/deadline.hpp"
#include "core/spawn.hpp"

#include <boost/asio/this_coro.hpp>

#include <cstdio>
#include <vector>

namespace airlock::dns {
namespace {

namespace asio = boost::asio;
using asio::ip::udp;

asio::awaitable<void> answer_datagram(udp::socket& socket, query_context& ctx, std::vector<std::byte> packet,
                                      udp::endpoint client) {
  auto reply = co_await answer_query(ctx, packet, client.address(), client.port(), true);
  if (!reply) co_return;
  // A failed send (client gone, ICMP unreachable) concerns this client only.
  co_await socket.async_send_to(asio::buffer(*reply), client, core::nothrow);
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
    core::spawn_session(ex, answer_datagram(socket, ctx, std::move(packet), client), [](const char* what) {
      std::fprintf(stderr, "airlock: dns query: internal error: %s\n", what);
    });
  }
}

}  // namespace airlock::dns
