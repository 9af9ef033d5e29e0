// The loop's deadline watch and cancel_after, on loopback sockets: a wait that outlives its
// limit is cancelled (or its object closed) and says so; one that finishes in time is
// untouched, and leaves no timer wait behind.
#include "base/deadline.hpp"
#include "base/deadline_watch.hpp"
#include "unit/spawn.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>

#include <doctest/doctest.h>

#include <chrono>
#include <exception>

namespace {

namespace asio = boost::asio;
using airlock::test::spawn;
using asio::ip::tcp;
using airlock::base::cancel_after;
using airlock::base::cancel_after_first_wait;
using airlock::base::nothrow;
using airlock::base::when_due;
using namespace std::chrono_literals;
using clock = std::chrono::steady_clock;

struct pair_of_sockets {
  asio::io_context io;
  tcp::acceptor acceptor{io, tcp::endpoint(asio::ip::address_v4::loopback(), 0)};
  tcp::socket near{io}, far{io};
  pair_of_sockets() {
    near.connect(acceptor.local_endpoint());
    far = acceptor.accept();
  }
};

struct read_outcome {
  bool passed = false;
  boost::system::error_code ec;
  std::size_t n = 0;
  clock::duration took{};
};

asio::awaitable<void> read_within(tcp::socket& s, clock::duration limit, read_outcome& out) {
  const auto started = clock::now();
  const cancel_after deadline(s, limit);
  char buf[16];
  auto [ec, n] = co_await s.async_read_some(asio::buffer(buf), nothrow);
  out = {deadline.passed(), ec, n, clock::now() - started};
}

}  // namespace

TEST_CASE("cancel_after: a read that outlives its limit is cancelled, and passed() says so") {
  pair_of_sockets p;
  read_outcome out;
  spawn(p.io, read_within(p.near, 150ms, out));
  p.io.run_for(5s);
  CHECK(out.passed);
  CHECK(out.ec == asio::error::operation_aborted);
  CHECK(out.took >= 150ms);
  CHECK(out.took < 2s);
  CHECK(p.near.is_open());  // cancelled, not closed: the caller still answers on it
}

TEST_CASE("cancel_after: a read that completes in time is untouched and leaves no wait behind") {
  pair_of_sockets p;
  read_outcome out;
  spawn(p.io, read_within(p.near, 2s, out));
  spawn(p.io, [](tcp::socket& s) -> asio::awaitable<void> {
    asio::steady_timer t(s.get_executor(), 50ms);
    co_await t.async_wait(nothrow);
    co_await asio::async_write(s, asio::buffer("hi", 2), nothrow);
  }(p.far));
  const auto started = clock::now();
  p.io.run_for(5s);  // returns as soon as the read is over: the watch's timer wait went with it
  CHECK(clock::now() - started < 1s);
  CHECK_FALSE(out.passed);
  CHECK_FALSE(out.ec);
  CHECK(out.n == 2);
}

TEST_CASE("cancel_after_first_wait: nothing is watched before arm(); armed, it cuts a wait as cancel_after does") {
  pair_of_sockets p;
  read_outcome out;
  bool passed_before_arm = true;
  spawn(p.io, [](tcp::socket& s, read_outcome& result, bool& before) -> asio::awaitable<void> {
    const auto started = clock::now();
    cancel_after_first_wait deadline(s, 150ms);
    asio::steady_timer t(s.get_executor(), 300ms);  // past the limit, but before any arm()
    co_await t.async_wait(nothrow);
    before = deadline.passed();
    deadline.arm();
    char buf[16];
    auto [ec, n] = co_await s.async_read_some(asio::buffer(buf), nothrow);
    result = {deadline.passed(), ec, n, clock::now() - started};
  }(p.near, out, passed_before_arm));
  p.io.run_for(5s);
  CHECK_FALSE(passed_before_arm);
  CHECK(out.passed);
  CHECK(out.ec == asio::error::operation_aborted);
  CHECK(out.took >= 450ms);  // the limit counts from the arm, not from the start
  CHECK(out.took < 3s);
}

TEST_CASE("cancel_after: deadlines of different limits on one loop each pass at their own") {
  pair_of_sockets a;
  tcp::socket other_near(a.io), other_far(a.io);
  other_near.connect(a.acceptor.local_endpoint());
  other_far = a.acceptor.accept();
  read_outcome slow, fast;
  spawn(a.io, read_within(a.near, 600ms, slow));
  spawn(a.io, read_within(other_near, 100ms, fast));
  a.io.run_for(5s);
  CHECK(fast.passed);
  CHECK(slow.passed);
  CHECK(fast.took >= 100ms);
  CHECK(fast.took < 500ms);
  CHECK(slow.took >= 600ms);
}

TEST_CASE("deadline_watch: many different limits, one after another, leave few lanes behind") {
  pair_of_sockets p;
  for (int i = 1; i <= 200; ++i) {
    const cancel_after deadline(p.near, std::chrono::milliseconds(1000 + i));  // a remaining time, say
  }
  CHECK(airlock::base::deadline_watch::of(p.near.get_executor()).lanes() <= 9);
}

TEST_CASE("cancel_after with when_due::close: the object is closed when the limit passes") {
  // What async_connect over several endpoints needs (a cancel would only move it on to the
  // next one); a listener nobody connects to is a wait that never ends on its own.
  asio::io_context io;
  tcp::acceptor listener(io, tcp::endpoint(asio::ip::address_v4::loopback(), 0));
  bool passed = false, open_after = true;
  spawn(io, [](tcp::acceptor& l, bool& p, bool& o) -> asio::awaitable<void> {
    const cancel_after deadline(l, 100ms, when_due::close);
    co_await l.async_wait(tcp::acceptor::wait_read, nothrow);
    p = deadline.passed();
    o = l.is_open();
  }(listener, passed, open_after));
  io.run_for(5s);
  CHECK(passed);
  CHECK_FALSE(open_after);
}
