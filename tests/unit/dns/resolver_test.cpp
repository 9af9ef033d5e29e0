// The resolver against a real UDP socket on loopback (port 0): a tiny upstream that
// counts questions and answers each after a delay, so concurrent identical questions are
// still outstanding when the second one is asked.
#include "dns/lookup.hpp"
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

TEST_CASE("an upstream reply is taken only for the question asked: one question, its name in any case, its type") {
  namespace wire = airlock::dns::wire;
  const auto name = airlock::policy::domain_name::parse("www.example.test");
  REQUIRE(name.has_value());
  auto reply = [](std::string_view qname, std::uint16_t qtype) {
    wire::message m;
    m.hdr.flags = wire::flag::qr;
    m.questions.push_back({*wire::name_from_text(qname), qtype, wire::class_in});
    return m;
  };
  using airlock::dns::answers_question;
  CHECK(answers_question(reply("www.example.test", wire::type::a), *name, wire::type::a));
  CHECK(answers_question(reply("WWW.Example.TEST", wire::type::a), *name, wire::type::a));
  CHECK_FALSE(answers_question(reply("other.example.test", wire::type::a), *name, wire::type::a));
  CHECK_FALSE(answers_question(reply("www.example.test", wire::type::aaaa), *name, wire::type::a));
  auto query = reply("www.example.test", wire::type::a);
  query.hdr.flags = 0;  // QR=0: a query, not a reply
  CHECK_FALSE(answers_question(query, *name, wire::type::a));
  auto two = reply("www.example.test", wire::type::a);
  two.questions.push_back(two.questions.front());
  CHECK_FALSE(answers_question(two, *name, wire::type::a));
  auto none = reply("www.example.test", wire::type::a);
  none.questions.clear();
  CHECK_FALSE(answers_question(none, *name, wire::type::a));
  auto chaos = reply("www.example.test", wire::type::a);
  chaos.questions.front().qclass = 3;
  CHECK_FALSE(answers_question(chaos, *name, wire::type::a));
}
