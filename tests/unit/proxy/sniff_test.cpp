// sniff() on loopback: the first bytes already queued when it starts (read at once), a
// head that comes in two parts, a client that stays silent (with and without a quiet
// limit), and one that closes half-way. The sniffed socket is accepted as the data path
// accepts (proxy/own_socket.hpp: registered with its loop by airlock).
#include "proxy/own_socket.hpp"
#include "proxy/sniff.hpp"
#include "unit/spawn.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include <doctest/doctest.h>

#include <chrono>
#include <exception>
#include <optional>
#include <string>

namespace {

namespace asio = boost::asio;
using airlock::test::spawn;
using asio::ip::tcp;
using airlock::proxy::sniff;
using airlock::proxy::sniffed;
using namespace std::chrono_literals;

struct pair_on_loopback {
  asio::io_context io;
  tcp::socket client{io}, accepted{io};
  pair_on_loopback() {
    tcp::acceptor acceptor(io, tcp::endpoint(asio::ip::address_v4::loopback(), 0));
    client.connect(acceptor.local_endpoint());
    airlock::test::spawn(io, [](tcp::acceptor& from, tcp::socket& into) -> asio::awaitable<void> {
      auto got = co_await airlock::proxy::accept_nonblocking(from);
      REQUIRE_FALSE(got.ec);
      into = std::move(got.socket);
    }(acceptor, accepted));
    io.run();
    io.restart();
  }
};

struct outcome {
  std::optional<sniffed> got;
  std::chrono::steady_clock::duration took{};
};

asio::awaitable<void> run_sniff(tcp::socket& s, outcome& out, std::chrono::steady_clock::duration limit,
                                std::optional<std::chrono::steady_clock::duration> quiet) {
  const auto started = std::chrono::steady_clock::now();
  out.got = co_await sniff(s, limit, quiet);
  out.took = std::chrono::steady_clock::now() - started;
}

// Sends `later` after `delay`, then closes if asked.
asio::awaitable<void> send_later(tcp::socket& s, std::string later, std::chrono::milliseconds delay, bool close) {
  asio::steady_timer t(s.get_executor(), delay);
  co_await t.async_wait(asio::use_awaitable);
  co_await asio::async_write(s, asio::buffer(later), asio::use_awaitable);
  if (close) s.shutdown(tcp::socket::shutdown_send);
}

const std::string head = "GET /x HTTP/1.1\r\nHost: example.test\r\n\r\n";

}  // namespace

TEST_CASE("sniff: a request already queued is judged from the first read, without waiting") {
  pair_on_loopback p;
  asio::write(p.client, asio::buffer(head));
  outcome out;
  spawn(p.io, run_sniff(p.accepted, out, 5s, 2s));
  p.io.run_for(10s);
  REQUIRE(out.got.has_value());
  CHECK(out.got->type == sniffed::kind::http);
  CHECK(out.got->name == "example.test");
  CHECK_FALSE(out.got->failure.has_value());
  CHECK_FALSE(out.got->silent);
  CHECK(out.got->bytes.size() == head.size());
  CHECK(out.took < 1s);  // not the quiet limit, nor the deadline
}

TEST_CASE("sniff: with no quiet limit, a request that comes after the first read found nothing is read as it arrives") {
  // The empty first read tells Asio the socket is drained: its read then waits for the
  // request's edge without trying the socket first, and must still wake for it.
  pair_on_loopback p;
  outcome out;
  spawn(p.io, run_sniff(p.accepted, out, 5s, std::nullopt));
  spawn(p.io, send_later(p.client, head, 50ms, false));
  p.io.run_for(10s);
  REQUIRE(out.got.has_value());
  CHECK(out.got->type == sniffed::kind::http);
  CHECK(out.got->name == "example.test");
  CHECK_FALSE(out.got->failure.has_value());
  CHECK(out.took < 1s);  // woken by the bytes, not the deadline
}

TEST_CASE("sniff: a head in two parts, the second 50 ms later, is read whole") {
  pair_on_loopback p;
  asio::write(p.client, asio::buffer(head.substr(0, 20)));
  outcome out;
  spawn(p.io, run_sniff(p.accepted, out, 5s, 2s));
  spawn(p.io, send_later(p.client, head.substr(20), 50ms, false));
  p.io.run_for(10s);
  REQUIRE(out.got.has_value());
  CHECK(out.got->type == sniffed::kind::http);
  CHECK(out.got->name == "example.test");
  CHECK(out.got->bytes.size() == head.size());
}

TEST_CASE("sniff: a client that waits for the server past the quiet limit is silent opaque TCP") {
  pair_on_loopback p;
  outcome out;
  spawn(p.io, run_sniff(p.accepted, out, 5s, 100ms));
  p.io.run_for(10s);
  REQUIRE(out.got.has_value());
  CHECK(out.got->type == sniffed::kind::opaque);
  CHECK(out.got->silent);
  CHECK_FALSE(out.got->failure.has_value());
  CHECK(out.took >= 100ms);
  CHECK(out.took < 4s);
}

TEST_CASE("sniff: a client that speaks within the quiet limit is read, not called silent") {
  pair_on_loopback p;
  outcome out;
  spawn(p.io, run_sniff(p.accepted, out, 5s, 2s));
  spawn(p.io, send_later(p.client, head, 50ms, false));
  p.io.run_for(10s);
  REQUIRE(out.got.has_value());
  CHECK(out.got->type == sniffed::kind::http);
  CHECK_FALSE(out.got->silent);
  CHECK(out.took < 2s);
}

// The deadline is watched only from sniff's first wait: a sniff whose first read found part
// of a head must still be watched once it waits for the rest.
TEST_CASE("sniff: with no quiet limit, silence ends at the deadline as a timeout") {
  pair_on_loopback p;
  std::string queued;
  SUBCASE("nothing queued at the start") {}
  SUBCASE("part of a head queued at the start") { queued = head.substr(0, 20); }
  if (!queued.empty()) asio::write(p.client, asio::buffer(queued));
  outcome out;
  spawn(p.io, run_sniff(p.accepted, out, 150ms, std::nullopt));
  p.io.run_for(10s);
  REQUIRE(out.got.has_value());
  REQUIRE(out.got->failure.has_value());
  CHECK(*out.got->failure == airlock::policy::reason::timeout);
  CHECK(out.got->bytes.size() == queued.size());
  CHECK(out.took >= 150ms);
  CHECK(out.took < 5s);
}

TEST_CASE("sniff: a head cut off by the client's FIN is truncated HTTP") {
  pair_on_loopback p;
  asio::write(p.client, asio::buffer(head.substr(0, 20)));
  p.client.shutdown(tcp::socket::shutdown_send);  // queued before sniff starts: the first read has both
  outcome out;
  spawn(p.io, run_sniff(p.accepted, out, 5s, 2s));
  p.io.run_for(10s);
  REQUIRE(out.got.has_value());
  REQUIRE(out.got->failure.has_value());
  CHECK(*out.got->failure == airlock::policy::reason::truncated);
  CHECK(out.got->type == sniffed::kind::http);
  CHECK(out.took < 1s);
}

TEST_CASE("sniff: a head whose second part and the client's FIN come together is truncated at once") {
  // The second part and the FIN reach the socket before the loop next polls, so one report
  // from the loop covers both: no later edge announces the FIN. It must still be found at
  // once, not at the deadline.
  pair_on_loopback p;
  asio::write(p.client, asio::buffer(head.substr(0, 10)));
  outcome out;
  spawn(p.io, run_sniff(p.accepted, out, 3s, std::nullopt));
  spawn(p.io, [](tcp::socket& c) -> asio::awaitable<void> {
    asio::steady_timer t(c.get_executor(), 50ms);
    co_await t.async_wait(asio::use_awaitable);
    asio::write(c, asio::buffer(head.substr(10, 10)));  // at once, with the FIN: one edge
    c.shutdown(tcp::socket::shutdown_send);
  }(p.client));
  p.io.run_for(10s);
  REQUIRE(out.got.has_value());
  REQUIRE(out.got->failure.has_value());
  CHECK(*out.got->failure == airlock::policy::reason::truncated);
  CHECK(out.took < 1s);
}
