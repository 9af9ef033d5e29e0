#include "daemon/decision_stream.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <doctest/doctest.h>

#include <thread>
#include <vector>

using namespace airlock;
namespace asio = boost::asio;

namespace {

struct nowhere final : record::decision_sink {
  void emit(const record::decision_record&) noexcept override {}
};

record::decision_record denial(std::string session) {
  record::decision_record r;
  r.session = std::move(session);
  r.verdict = policy::verdict::deny;
  return r;
}

// Runs the stream's next() on its own loop and returns what it gave.
std::optional<std::string> next_of(asio::io_context& io, daemon::body_stream& s) {
  std::optional<std::string> got;
  asio::co_spawn(
      io, [&]() -> asio::awaitable<void> { got = co_await s.next(); }, asio::detached);
  io.restart();
  io.run();
  return got;
}

}  // namespace

TEST_CASE("the query names a session and asks for denials only; anything else is refused by name") {
  auto f = daemon::parse_decisions_query("/v1/decisions");
  REQUIRE(f.has_value());
  CHECK(f->session.empty());
  CHECK_FALSE(f->denials_only);
  f = daemon::parse_decisions_query("/v1/decisions?session=sbx%2D1%20b&deny=1");
  REQUIRE(f.has_value());
  CHECK(f->session == "sbx-1 b");
  CHECK(f->denials_only);
  CHECK(daemon::parse_decisions_query("/v1/decisions?deny=true&&")->denials_only);
  CHECK_FALSE(daemon::parse_decisions_query("/v1/decisions?deny=0")->denials_only);
  CHECK(daemon::parse_decisions_query("/v1/decisions?deny=maybe").error() == "deny: expected 1 or 0");
  CHECK(daemon::parse_decisions_query("/v1/decisions?session=").error() == "session: expected a session id");
  CHECK(daemon::parse_decisions_query("/v1/decisions?session=a%2").error().starts_with("session: a %-escape"));
  CHECK(daemon::parse_decisions_query("/v1/decisions?session=a%zz").has_error());
  CHECK(daemon::parse_decisions_query("/v1/decisions?verdict=deny").error() ==
        "unknown parameter 'verdict' (expected session, deny)");
}

TEST_CASE("a decision made on another thread ends the stream's wait, with its line") {
  nowhere log;
  record::decision_feed feed(log);
  asio::io_context io;
  auto s = daemon::stream_decisions(io.get_executor(), feed, record::feed_filter{"a", false}, std::chrono::seconds(30));
  std::thread other([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    feed.emit(denial("b"));  // another session's: not this stream's
    feed.emit(denial("a"));
  });
  const auto t0 = std::chrono::steady_clock::now();
  const auto got = next_of(io, *s);
  other.join();
  REQUIRE(got.has_value());
  CHECK(got->find("\"session\":\"a\"") != std::string::npos);
  CHECK(got->find("\"session\":\"b\"") == std::string::npos);
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(10));  // woken, not the heartbeat
}

TEST_CASE("nothing to say for a heartbeat: a newline alone") {
  nowhere log;
  record::decision_feed feed(log);
  asio::io_context io;
  auto s = daemon::stream_decisions(io.get_executor(), feed, {}, std::chrono::milliseconds(20));
  CHECK(next_of(io, *s) == std::optional<std::string>("\n"));
}

TEST_CASE("lines a slow reader lost are said in their place") {
  nowhere log;
  record::decision_feed feed(log);
  asio::io_context io;
  auto s = daemon::stream_decisions(io.get_executor(), feed, {}, std::chrono::seconds(30));
  for (std::size_t i = 0; i < record::feed_subscription::default_capacity + 5; ++i) feed.emit(denial("a"));
  const auto got = next_of(io, *s);
  REQUIRE(got.has_value());
  CHECK(got->starts_with("{\"event\":\"tail_dropped\",\"lines\":5}\n{"));
}

TEST_CASE("a stream let go of leaves the feed") {
  nowhere log;
  record::decision_feed feed(log);
  asio::io_context io;
  auto s = daemon::stream_decisions(io.get_executor(), feed, {});
  CHECK(feed.watchers() == 1);
  s.reset();
  feed.emit(denial("a"));
  CHECK(feed.watchers() == 0);
}

TEST_CASE("at most max_decision_streams at once: the next is refused until one ends") {
  nowhere log;
  record::decision_feed feed(log);
  asio::io_context io;
  std::vector<std::shared_ptr<daemon::body_stream>> open;
  for (std::size_t i = 0; i < daemon::max_decision_streams; ++i) {
    open.push_back(daemon::stream_decisions(io.get_executor(), feed, {}));
    REQUIRE(open.back() != nullptr);
  }
  CHECK(daemon::stream_decisions(io.get_executor(), feed, {}) == nullptr);
  open.pop_back();
  CHECK(daemon::stream_decisions(io.get_executor(), feed, {}) != nullptr);
}
