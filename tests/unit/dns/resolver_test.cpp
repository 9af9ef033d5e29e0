// The resolver against a real UDP socket on loopback (port 0): a tiny upstream that
// counts questions and answers each after a delay, so concurrent identical questions are
// still outstanding when the second one is asked.
#include "dns/resolver.hpp"
#include "dns/wire.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/udp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <doctest/doctest.h>

namespace asio = boost::asio;
using airlock::dns::raw_answer;
using airlock::dns::resolve_error;
using airlock::dns::resolver;
using asio::ip::udp;

namespace {

struct slow_upstream {
  udp::socket socket;
  int questions = 0;

  explicit slow_upstream(asio::io_context& io) : socket(io, udp::endpoint(asio::ip::make_address("127.0.0.1"), 0)) {}

  asio::awaitable<void> serve() {
    std::array<char, 512> buf;
    for (;;) {
      udp::endpoint from;
      const auto n = co_await socket.async_receive_from(asio::buffer(buf), from, asio::use_awaitable);
      ++questions;
      std::string reply(buf.data(), n);
      reply[2] = static_cast<char>(reply[2] | 0x80);  // QR: a NODATA answer to the same question
      asio::steady_timer wait(socket.get_executor(), std::chrono::milliseconds(100));
      co_await wait.async_wait(asio::use_awaitable);
      co_await socket.async_send_to(asio::buffer(reply), from, asio::use_awaitable);
    }
  }
};

}  // namespace

TEST_CASE("identical questions in flight share one upstream query; distinct ones past the cap are refused") {
  asio::io_context io;
  slow_upstream upstream(io);
  asio::co_spawn(io, upstream.serve(), asio::detached);  // test-only server, ends with io
  resolver::options o;
  o.servers.push_back({upstream.socket.local_endpoint().address(), upstream.socket.local_endpoint().port()});
  o.max_in_flight = 1;
  auto r = resolver::create(io.get_executor(), o);
  REQUIRE(r.has_value());

  std::vector<raw_answer> answers;
  std::size_t expected = 3;
  auto ask = [&](std::string name) -> asio::awaitable<void> {
    answers.push_back(co_await (*r)->query(name, airlock::dns::wire::type::a));
    if (answers.size() == expected) io.stop();  // the upstream's loop would keep run_for busy
  };
  asio::co_spawn(io, ask("same.example.test"), asio::detached);
  asio::co_spawn(io, ask("same.example.test"), asio::detached);
  asio::co_spawn(io, ask("other.example.test"), asio::detached);
  io.run_for(std::chrono::seconds(3));

  REQUIRE(answers.size() == 3);
  // The distinct question found the one slot taken and was refused at once.
  REQUIRE_FALSE(answers[0].has_value());
  CHECK(answers[0].error() == resolve_error::overloaded);
  CHECK(answers[1].has_value());
  CHECK(answers[2].has_value());
  CHECK(upstream.questions == 1);

  // Once answered, the same question goes upstream again (caching is not the resolver's job).
  io.restart();
  expected = 4;
  asio::co_spawn(io, ask("same.example.test"), asio::detached);
  io.run_for(std::chrono::seconds(3));
  CHECK(answers.size() == 4);
  CHECK(upstream.questions == 2);
}
