// accept_nonblocking on loopback: connections that were waiting and ones that come while it
// waits (the wait after an empty accept takes the listener's next edge, with no re-arm), the
// socket it returns (non-blocking, with the peer accept gave), a closed listener, and a loop
// torn down mid-wait.
#include "base/deadline.hpp"
#include "proxy/own_socket.hpp"
#include "unit/spawn.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include <doctest/doctest.h>

#include <chrono>
#include <exception>
#include <vector>

#include <fcntl.h>

namespace {

namespace asio = boost::asio;
using airlock::test::spawn;
using asio::ip::tcp;
using airlock::base::nothrow;
using airlock::proxy::accept_nonblocking;
using namespace std::chrono_literals;

struct accepted_one {
  boost::system::error_code ec;
  bool open = false;
  bool nonblocking = false;
  tcp::endpoint peer;
};

asio::awaitable<void> accept_n(tcp::acceptor& listener, int n, std::vector<accepted_one>& out) {
  for (int i = 0; i < n; ++i) {
    auto [ec, socket, peer, held] = co_await accept_nonblocking(listener);
    CHECK_FALSE(held);
    accepted_one a{ec, socket.is_open(), false, peer};
    if (socket.is_open()) a.nonblocking = (::fcntl(socket.native_handle(), F_GETFL) & O_NONBLOCK) != 0;
    out.push_back(a);
    if (ec) co_return;
  }
}

tcp::acceptor loopback_listener(asio::io_context& io) {
  return tcp::acceptor(io, tcp::endpoint(asio::ip::address_v4::loopback(), 0));
}

}  // namespace

TEST_CASE("accept_nonblocking: connections waiting before it and ones that come while it waits") {
  asio::io_context io;
  auto listener = loopback_listener(io);
  std::vector<tcp::socket> clients;
  for (int i = 0; i < 3; ++i) {  // queued before the first accept
    clients.emplace_back(io);
    clients.back().connect(listener.local_endpoint());
  }
  std::vector<accepted_one> got;
  spawn(io, accept_n(listener, 5, got));
  // Two more once the accept loop has found the queue empty and waits for the next edge.
  spawn(io, [](asio::io_context& ctx, tcp::acceptor& l, std::vector<tcp::socket>& cs) -> asio::awaitable<void> {
    for (int i = 0; i < 2; ++i) {
      asio::steady_timer t(ctx, 50ms);
      co_await t.async_wait(nothrow);
      cs.emplace_back(ctx);
      cs.back().connect(l.local_endpoint());
    }
  }(io, listener, clients));
  io.run_for(5s);
  REQUIRE(got.size() == 5);
  for (std::size_t i = 0; i < got.size(); ++i) {
    CAPTURE(i);
    CHECK_FALSE(got[i].ec);
    CHECK(got[i].open);
    CHECK(got[i].nonblocking);                          // accept4(SOCK_NONBLOCK): no ioctl needed
    CHECK(got[i].peer == clients[i].local_endpoint());  // in the order they connected
  }
}

TEST_CASE("accept_nonblocking: a refusing admit leaves the connection queued; a later call takes it") {
  asio::io_context io;
  auto listener = loopback_listener(io);
  tcp::socket client(io);
  client.connect(listener.local_endpoint());
  bool open_gate = false;
  std::vector<bool> held;
  std::vector<tcp::endpoint> peers;
  spawn(io,
        [](tcp::acceptor& l, bool& gate, std::vector<bool>& h, std::vector<tcp::endpoint>& p) -> asio::awaitable<void> {
          constexpr auto admit = [](const void* g) { return *static_cast<const bool*>(g); };
          for (int i = 0; i < 2; ++i) {
            auto got = co_await accept_nonblocking(l, admit, &gate);
            h.push_back(got.held);
            if (got.socket.is_open()) p.push_back(got.peer);
            gate = true;  // the second call may accept
          }
        }(listener, open_gate, held, peers));
  io.run_for(2s);
  REQUIRE(held.size() == 2);
  CHECK(held[0]);  // refused: nothing accepted, the connection still queued
  CHECK_FALSE(held[1]);
  REQUIRE(peers.size() == 1);
  CHECK(peers[0] == client.local_endpoint());  // the one that waited is the one taken
}

TEST_CASE("accept_nonblocking: a listener closed while it waits ends the wait with operation_aborted") {
  asio::io_context io;
  auto listener = loopback_listener(io);
  std::vector<accepted_one> got;
  spawn(io, accept_n(listener, 1, got));
  spawn(io, [](asio::io_context& ctx, tcp::acceptor& l) -> asio::awaitable<void> {
    asio::steady_timer t(ctx, 50ms);
    co_await t.async_wait(nothrow);
    l.close();
  }(io, listener));
  io.run_for(5s);
  REQUIRE(got.size() == 1);
  CHECK(got[0].ec == asio::error::operation_aborted);
  CHECK_FALSE(got[0].open);
}

TEST_CASE("accept_nonblocking: a loop torn down while it waits unwinds the waiting coroutine") {
  bool unwound = false;
  {
    asio::io_context io;
    auto listener = loopback_listener(io);
    struct on_unwind {
      bool& flag;
      ~on_unwind() { flag = true; }
    };
    spawn(io, [](tcp::acceptor& l, bool& flag) -> asio::awaitable<void> {
      on_unwind guard{flag};
      co_await accept_nonblocking(l);
    }(listener, unwound));
    io.run_for(100ms);
    CHECK_FALSE(unwound);  // still waiting
  }
  CHECK(unwound);  // the loop's teardown freed the wait and, with it, the coroutine
}
