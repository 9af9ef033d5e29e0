// The relay on loopback: bytes both ways with half-close, a reset passed on as a reset,
// the idle timeout (and traffic pushing it back: each byte after the first wakes a way that
// read its socket empty), a meter that cuts, and a loop torn down mid-relay. The relay's
// sockets are opened as the data path opens them (registered with the loop by airlock,
// proxy/own_socket.hpp); the tests that turn on what the loop reported also run on sockets
// Asio registered. The relay that owns its connection (proxy/owned_relay.hpp) is the same
// relay: its own tests check what owning adds.
#include "base/deadline.hpp"
#include "proxy/own_socket.hpp"
#include "proxy/owned_relay.hpp"
#include "proxy/relay.hpp"
#include "unit/spawn.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>

#include <doctest/doctest.h>

#include <chrono>
#include <exception>
#include <limits>
#include <optional>
#include <string>
#include <utility>

#include <sys/socket.h>

namespace {

namespace asio = boost::asio;
using airlock::test::spawn;
using asio::ip::tcp;
using airlock::base::nothrow;
using airlock::proxy::relay;
using airlock::proxy::relay_meter;
using airlock::proxy::relay_totals;
using airlock::proxy::reset_by;
using namespace std::chrono_literals;

enum class opened_by { airlock, asio };

// A connected pair of loopback sockets: the first opened as `by` opens its sockets.
std::pair<tcp::socket, tcp::socket> socket_pair(asio::io_context& io, opened_by by = opened_by::airlock) {
  tcp::acceptor acceptor(io, tcp::endpoint(asio::ip::address_v4::loopback(), 0));
  tcp::socket a(io);
  if (by == opened_by::airlock) REQUIRE_FALSE(airlock::proxy::open_nonblocking(a, tcp::v4()));
  a.connect(acceptor.local_endpoint());
  tcp::socket b = acceptor.accept();
  return {std::move(a), std::move(b)};
}

// Two pairs: the client's end, the relay's two ends, the upstream's end.
struct wiring {
  asio::io_context io;
  tcp::socket client{io}, relay_client{io}, relay_upstream{io}, upstream{io};
  explicit wiring(opened_by by = opened_by::airlock) {
    std::tie(relay_client, client) = socket_pair(io, by);
    std::tie(relay_upstream, upstream) = socket_pair(io, by);
  }
};

// Which way the relay's sockets were opened, as a doctest subcase of the test that calls it.
opened_by either_way() {
  opened_by by = opened_by::airlock;
  SUBCASE("sockets airlock registered") { by = opened_by::airlock; }
  SUBCASE("sockets Asio registered") { by = opened_by::asio; }
  return by;
}

// Reads to EOF (or a reset), bounded. `ended`: how, eof for a FIN, connection_reset for a RST.
asio::awaitable<std::string> read_all(tcp::socket& s, boost::system::error_code* ended = nullptr) {
  std::string out;
  char buf[4096];
  for (int i = 0; i < 10000; ++i) {
    auto [ec, n] = co_await s.async_read_some(asio::buffer(buf), nothrow);
    out.append(buf, n);
    if (ec) {
      if (ended) *ended = ec;
      break;
    }
  }
  co_return out;
}

// Ends `s` with a RST instead of a FIN.
void reset(tcp::socket& s) {
  s.set_option(asio::socket_base::linger(true, 0));
  s.close();
}

struct counting_meter final : relay_meter {
  std::uint64_t allow;  // bytes allowed before the cut
  std::uint64_t seen = 0;
  explicit counting_meter(std::uint64_t a) : allow(a) {}
  bool moved(bool, std::uint64_t bytes) noexcept override {
    seen += bytes;
    return seen <= allow;
  }
};

struct outcome {
  std::optional<relay_totals> totals;
  std::chrono::steady_clock::duration took{};
};

asio::awaitable<void> run_relay(wiring& w, outcome& out, std::chrono::steady_clock::duration idle,
                                relay_meter* meter = nullptr) {
  const auto started = std::chrono::steady_clock::now();
  out.totals = co_await relay(w.relay_client, w.relay_upstream, idle, meter);
  out.took = std::chrono::steady_clock::now() - started;
}

asio::awaitable<void> drain(tcp::socket& s, std::string& into, boost::system::error_code* ended = nullptr) {
  into = co_await read_all(s, ended);
}

// Reads `s` to its end (the relay passed a FIN on), then ends its own way too.
asio::awaitable<void> read_then_end(tcp::socket& s, std::string& got) {
  got = co_await read_all(s);
  s.shutdown(tcp::socket::shutdown_send);
}

struct on_unwind {
  bool& flag;
  ~on_unwind() { flag = true; }
};

asio::awaitable<void> relay_then_mark(wiring& w, bool& unwound) {
  on_unwind guard{unwound};
  co_await relay(w.relay_client, w.relay_upstream, 60s);
}

}  // namespace

TEST_CASE("relay: both ways, a half-close passed on, byte counts") {
  wiring w(either_way());
  outcome out;
  std::string at_upstream, at_client;
  spawn(w.io, run_relay(w, out, 5s));
  spawn(w.io, [](wiring& ws, std::string& got) -> asio::awaitable<void> {
    const std::string big(300000, 'u');  // more than a pipe holds: the writer waits for the reader
    co_await asio::async_write(ws.client, asio::buffer(big), nothrow);
    ws.client.shutdown(tcp::socket::shutdown_send);  // half-close: the answer still comes back
    got = co_await read_all(ws.client);
  }(w, at_client));
  boost::system::error_code upstream_end;
  spawn(w.io, [](wiring& ws, std::string& got, boost::system::error_code& end) -> asio::awaitable<void> {
    got = co_await read_all(ws.upstream, &end);  // ends at the passed-on FIN
    const std::string answer = "answer";
    co_await asio::async_write(ws.upstream, asio::buffer(answer), nothrow);
    ws.upstream.shutdown(tcp::socket::shutdown_send);
  }(w, at_upstream, upstream_end));
  const auto started = std::chrono::steady_clock::now();
  w.io.run_for(10s);
  CHECK(std::chrono::steady_clock::now() - started < 5s);  // over when the relay is: nothing left waiting
  REQUIRE(out.totals.has_value());
  CHECK(at_upstream.size() == 300000);
  CHECK(upstream_end == asio::error::eof);  // a FIN, not a reset
  CHECK(at_client == "answer");
  CHECK(out.totals->up == 300000);
  CHECK(out.totals->down == 6);
  CHECK_FALSE(out.totals->idle_timeout);
  CHECK_FALSE(out.totals->cut);
  CHECK(out.totals->reset == reset_by::none);
  // The last FIN was sent by closing both (a close instead of a shutdown and a close).
  CHECK_FALSE(w.relay_client.is_open());
  CHECK_FALSE(w.relay_upstream.is_open());
}

// Bytes that say where they are: a reordering or a lost chunk shows.
std::string pattern(std::size_t n, char salt) {
  std::string s(n, '\0');
  for (std::size_t i = 0; i < n; ++i)
    s[i] = static_cast<char>((i * 131 + i / 4096 + static_cast<unsigned char>(salt)) & 0xff);
  return s;
}

TEST_CASE("relay: a small exchange copied, then a stream that turns bulk (splice), arrive whole and in order") {
  wiring w;
  outcome out;
  const std::string head = pattern(100, 'h'), body = pattern(1 << 20, 'b'), answer = pattern(3 << 20, 'a');
  std::string at_upstream, at_client;
  spawn(w.io, run_relay(w, out, 5s));
  spawn(w.io, [](wiring& ws, const std::string& h, const std::string& b, std::string& got) -> asio::awaitable<void> {
    co_await asio::async_write(ws.client, asio::buffer(h), nothrow);  // a step of its own (copied)
    asio::steady_timer t(ws.io);
    t.expires_after(50ms);
    co_await t.async_wait(nothrow);
    co_await asio::async_write(ws.client, asio::buffer(b), nothrow);  // fills the buffer: bulk
    ws.client.shutdown(tcp::socket::shutdown_send);
    got = co_await read_all(ws.client);
  }(w, head, body, at_client));
  spawn(w.io, [](wiring& ws, const std::string& a, std::string& got) -> asio::awaitable<void> {
    got = co_await read_all(ws.upstream);
    co_await asio::async_write(ws.upstream, asio::buffer(a), nothrow);
    ws.upstream.shutdown(tcp::socket::shutdown_send);
  }(w, answer, at_upstream));
  w.io.run_for(20s);
  REQUIRE(out.totals.has_value());
  CHECK(at_upstream.size() == head.size() + body.size());
  CHECK(at_upstream == head + body);
  CHECK(at_client.size() == answer.size());
  CHECK(at_client == answer);
  CHECK(out.totals->up == head.size() + body.size());
  CHECK(out.totals->down == answer.size());
}

TEST_CASE("relay: an answer that arrives with its FIN is passed on whole, then the FIN; the other way goes on") {
  wiring w(either_way());
  outcome out;
  // Both are queued before the relay first looks: its read finds the bytes, its second
  // look the FIN, and the two leave together (MSG_MORE, then the half-close).
  asio::write(w.upstream, asio::buffer(std::string("answer")));
  w.upstream.shutdown(tcp::socket::shutdown_send);
  std::string at_upstream, at_client;
  spawn(w.io, run_relay(w, out, 5s));
  spawn(w.io, [](wiring& ws, std::string& got) -> asio::awaitable<void> {
    got = co_await read_all(ws.client);  // ends at the passed-on FIN
    const std::string late = "late";     // the client's way is still open
    co_await asio::async_write(ws.client, asio::buffer(late), nothrow);
    ws.client.shutdown(tcp::socket::shutdown_send);
  }(w, at_client));
  spawn(w.io, [](wiring& ws, std::string& got) -> asio::awaitable<void> {
    got = co_await read_all(ws.upstream);
  }(w, at_upstream));
  w.io.run_for(10s);
  REQUIRE(out.totals.has_value());
  CHECK(at_client == "answer");
  CHECK(at_upstream == "late");
  CHECK(out.totals->down == 6);
  CHECK(out.totals->up == 4);
}

// The relay asks the loop to report a peer's FIN (EPOLLRDHUP) and, after a short read,
// looks for a FIN only when the last report said one came: these two check both sides of
// that, on a relay already waiting (its sockets re-armed) when the origin speaks.
asio::awaitable<void> answer_then_close(wiring& ws, std::chrono::milliseconds between) {
  asio::steady_timer t(ws.io, 50ms);
  co_await t.async_wait(nothrow);  // the relay waits on both sockets by now
  // Written at once, not with async_write: that would resume this coroutine only after
  // the loop had polled, and the FIN would always come in a later report.
  asio::write(ws.upstream, asio::buffer("answer", 6));
  if (between > 0ms) {
    t.expires_after(between);
    co_await t.async_wait(nothrow);
  }
  ws.upstream.shutdown(tcp::socket::shutdown_send);
}

TEST_CASE("relay: an answer and its FIN in one report from the loop: the FIN is found behind the bytes") {
  wiring w(either_way());
  outcome out;
  std::string at_client;
  spawn(w.io, run_relay(w, out, 30s));
  spawn(w.io, answer_then_close(w, 0ms));  // both sent before the loop polls again
  spawn(w.io, read_then_end(w.client, at_client));
  w.io.run_for(40s);
  REQUIRE(out.totals.has_value());
  CHECK(out.took < 5s);  // not the idle limit: the FIN was not left unread
  CHECK_FALSE(out.totals->idle_timeout);
  CHECK(at_client == "answer");
}

TEST_CASE("relay: a FIN that comes after its answer was read is passed on at once") {
  wiring w(either_way());
  outcome out;
  std::string at_client;
  spawn(w.io, run_relay(w, out, 30s));
  spawn(w.io, answer_then_close(w, 100ms));  // the bytes are read and passed on first
  spawn(w.io, read_then_end(w.client, at_client));
  w.io.run_for(40s);
  REQUIRE(out.totals.has_value());
  CHECK(out.took < 5s);
  CHECK_FALSE(out.totals->idle_timeout);
  CHECK(at_client == "answer");
  CHECK(out.totals->down == 6);
}

TEST_CASE("relay: an answer the loop reported before the relay began (no FIN behind it) is read at once") {
  wiring w(either_way());
  outcome out;
  asio::write(w.upstream, asio::buffer("answer", 6));
  std::string at_client;
  spawn(w.io, [](wiring& ws, outcome& o) -> asio::awaitable<void> {
    asio::steady_timer t(ws.io, 50ms);  // the loop reports the answer while nothing waits for it
    co_await t.async_wait(nothrow);
    co_await run_relay(ws, o, 3s);
  }(w, out));
  spawn(w.io, [](wiring& ws, std::string& got) -> asio::awaitable<void> {
    std::string answer(6, '\0');
    co_await asio::async_read(ws.client, asio::buffer(answer), nothrow);
    got = answer;
    ws.upstream.shutdown(tcp::socket::shutdown_send);  // only now: its edge would wake the relay
    ws.client.shutdown(tcp::socket::shutdown_send);
  }(w, at_client));
  w.io.run_for(10s);
  REQUIRE(out.totals.has_value());
  CHECK(at_client == "answer");
  CHECK_FALSE(out.totals->idle_timeout);
  CHECK(out.took < 2s);
}

TEST_CASE("relay: an answer read short with no FIN reported is not taken for the end: later bytes follow it") {
  wiring w(either_way());
  outcome out;
  std::string at_client;
  spawn(w.io, run_relay(w, out, 30s));
  spawn(w.io, [](wiring& ws) -> asio::awaitable<void> {
    asio::steady_timer t(ws.io, 50ms);
    co_await t.async_wait(nothrow);
    asio::write(ws.upstream, asio::buffer("answer", 6));
    t.expires_after(100ms);  // read and passed on before the rest comes
    co_await t.async_wait(nothrow);
    asio::write(ws.upstream, asio::buffer("+more", 5));
    ws.upstream.shutdown(tcp::socket::shutdown_send);
  }(w));
  spawn(w.io, read_then_end(w.client, at_client));
  w.io.run_for(40s);
  REQUIRE(out.totals.has_value());
  CHECK(out.took < 5s);
  CHECK(at_client == "answer+more");
  CHECK(out.totals->down == 11);
}

TEST_CASE("relay: bytes behind an urgent byte are not left behind, nor is the FIN after them") {
  wiring w(either_way());
  outcome out;
  // Queued before the relay first looks. A read stops short before an urgent byte, so the
  // short read that a FIN in the same report would otherwise end leaves "def" and the FIN
  // behind it; the urgent byte itself is not passed on (nothing reads out-of-band data).
  asio::write(w.upstream, asio::buffer("abc", 3));
  w.upstream.send(asio::buffer("X", 1), tcp::socket::message_out_of_band);
  asio::write(w.upstream, asio::buffer("def", 3));
  w.upstream.shutdown(tcp::socket::shutdown_send);
  std::string at_client;
  spawn(w.io, run_relay(w, out, 30s));
  spawn(w.io, read_then_end(w.client, at_client));
  w.io.run_for(40s);
  REQUIRE(out.totals.has_value());
  CHECK(out.took < 5s);
  CHECK_FALSE(out.totals->idle_timeout);
  CHECK(at_client == "abcdef");
}

// splice(2) never passes an urgent byte: at one it moves nothing, or returns 0 (as at the
// end of the stream) when a FIN is behind. A bulk way must step over it with a read, and
// not wait for an edge that has come (the bytes behind it arrive before any FIN here).
TEST_CASE("relay: a bulk stream with an urgent byte in it arrives whole (less that byte) and at once") {
  wiring w(either_way());
  outcome out;
  const std::string bulk = pattern(256 << 10, 'u');  // fills the copy buffer: splice from then on
  std::string at_client(bulk.size() + 6, '\0');
  std::size_t got = 0;
  spawn(w.io, run_relay(w, out, 30s));
  spawn(w.io, [](wiring& ws, const std::string& b) -> asio::awaitable<void> {
    co_await asio::async_write(ws.upstream, asio::buffer(b), nothrow);
    asio::steady_timer t(ws.io, 100ms);  // relayed, and the way waits again, before the rest
    co_await t.async_wait(nothrow);
    asio::write(ws.upstream, asio::buffer("abc", 3));
    ws.upstream.send(asio::buffer("X", 1), tcp::socket::message_out_of_band);
    asio::write(ws.upstream, asio::buffer("def", 3));
  }(w, bulk));
  spawn(w.io, [](tcp::socket& c, std::string& into, std::size_t& n) -> asio::awaitable<void> {
    auto [ec, read] = co_await asio::async_read(c, asio::buffer(into), nothrow);
    n = read;
  }(w.client, at_client, got));
  w.io.run_for(3s);  // no FIN yet: a way stuck at the urgent byte would still wait here
  CHECK(got == bulk.size() + 6);
  CHECK(at_client.compare(0, bulk.size(), bulk) == 0);
  CHECK(at_client.substr(bulk.size()) == "abcdef");
  w.upstream.shutdown(tcp::socket::shutdown_send);
  w.client.shutdown(tcp::socket::shutdown_send);
  w.io.run_for(10s);
  REQUIRE(out.totals.has_value());
  CHECK_FALSE(out.totals->idle_timeout);
  CHECK(out.totals->down == bulk.size() + 6);
}

// The same when the urgent byte and its FIN come while the way moves bulk steps one after
// another, so that the loop's last report for the socket predates them: the meter, which
// the relay tells after each step, sends them then.
struct tail_sender final : relay_meter {
  tcp::socket& upstream;
  std::uint64_t after;  // bytes down before the tail is sent
  std::uint64_t seen = 0;
  tail_sender(tcp::socket& u, std::uint64_t a) : upstream(u), after(a) {}
  bool moved(bool up, std::uint64_t bytes) noexcept override {
    if (up || seen >= after || (seen += bytes) < after) return true;
    const int fd = upstream.native_handle();
    (void)::send(fd, "abc", 3, MSG_NOSIGNAL);
    (void)::send(fd, "X", 1, MSG_OOB | MSG_NOSIGNAL);
    (void)::send(fd, "def", 3, MSG_NOSIGNAL);
    ::shutdown(fd, SHUT_WR);
    return true;
  }
};

TEST_CASE("relay: an urgent byte and a FIN that arrive mid-bulk, in no report yet, do not cut the stream short") {
  wiring w(either_way());
  // Queued before the relay starts (within what loopback's buffers hold unread): a full
  // copied step, then a splice step, after which the meter sends the tail.
  const std::string bulk = pattern(64 << 10, 'v');
  asio::write(w.upstream, asio::buffer(bulk));
  tail_sender meter(w.upstream, bulk.size());
  outcome out;
  std::string at_client;
  spawn(w.io, run_relay(w, out, 30s, &meter));
  spawn(w.io, read_then_end(w.client, at_client));
  w.io.run_for(40s);
  REQUIRE(out.totals.has_value());
  CHECK(out.took < 5s);
  CHECK(at_client.size() == bulk.size() + 6);
  CHECK(at_client.compare(0, bulk.size(), bulk) == 0);
  CHECK(at_client.substr(bulk.size()) == "abcdef");
}

TEST_CASE("relay: bytes and a FIN that came before airlock accepted the connection are relayed, with no poll between") {
  asio::io_context io;
  tcp::acceptor listener(io, tcp::endpoint(asio::ip::address_v4::loopback(), 0));
  tcp::socket client(io);
  client.connect(listener.local_endpoint());
  asio::write(client, asio::buffer("early", 5));
  client.shutdown(tcp::socket::shutdown_send);
  auto [relay_upstream, upstream] = socket_pair(io);
  tcp::socket relay_client(io);
  outcome out;
  std::string at_upstream;
  // Accepted and relayed in one go, before the loop polls again: the relay's first wait
  // is for the next edge (airlock's registration knows of no bytes), and epoll reports
  // what was there when the socket was added to it.
  spawn(io, [](tcp::acceptor& l, tcp::socket& c, tcp::socket& u, outcome& o) -> asio::awaitable<void> {
    auto accepted = co_await airlock::proxy::accept_nonblocking(l);
    REQUIRE_FALSE(accepted.ec);
    c = std::move(accepted.socket);
    const auto started = std::chrono::steady_clock::now();
    o.totals = co_await relay(c, u, 30s);
    o.took = std::chrono::steady_clock::now() - started;
  }(listener, relay_client, relay_upstream, out));
  spawn(io, read_then_end(upstream, at_upstream));
  io.run_for(40s);
  REQUIRE(out.totals.has_value());
  CHECK(out.took < 5s);
  CHECK(at_upstream == "early");
  CHECK(out.totals->up == 5);
}

TEST_CASE("relay: an answer with a reset queued behind it is passed on, then the reset") {
  wiring w(either_way());
  outcome out;
  // Both are queued before the relay first looks: its read finds the bytes and its second
  // look takes the reset, which the socket reports only that once (a read after it finds
  // EOF). The bytes go on, then the reset: the client must not read a clean end.
  asio::write(w.upstream, asio::buffer(std::string("answer")));
  reset(w.upstream);
  std::string at_client;
  boost::system::error_code client_end;
  spawn(w.io, run_relay(w, out, 30s));
  spawn(w.io, [](wiring& ws, std::string& got, boost::system::error_code& end) -> asio::awaitable<void> {
    got = co_await read_all(ws.client, &end);
  }(w, at_client, client_end));
  w.io.run_for(40s);
  REQUIRE(out.totals.has_value());
  CHECK_FALSE(out.totals->idle_timeout);
  CHECK(out.took < 5s);
  CHECK(out.totals->down == at_client.size());  // what was counted is what arrived
  CHECK(at_client == "answer");
  CHECK(client_end == asio::error::connection_reset);  // the reset passed on, not a clean end
  CHECK(out.totals->reset == reset_by::upstream);
  CHECK_FALSE(w.relay_client.is_open());
  CHECK_FALSE(w.relay_upstream.is_open());
}

TEST_CASE("relay: a client that resets mid-stream: the upstream is reset too, and the totals say who") {
  wiring w;
  outcome out;
  std::string at_upstream;
  boost::system::error_code upstream_end;
  spawn(w.io, run_relay(w, out, 30s));
  spawn(w.io, [](wiring& ws) -> asio::awaitable<void> {
    co_await asio::async_write(ws.client, asio::buffer("part", 4), nothrow);
    asio::steady_timer t(ws.io, 50ms);
    co_await t.async_wait(nothrow);
    reset(ws.client);
  }(w));
  spawn(w.io, drain(w.upstream, at_upstream, &upstream_end));
  w.io.run_for(40s);
  REQUIRE(out.totals.has_value());
  CHECK(out.took < 5s);
  CHECK(at_upstream == "part");
  CHECK(upstream_end == asio::error::connection_reset);
  CHECK(out.totals->reset == reset_by::client);
  CHECK(out.totals->up == 4);
}

TEST_CASE("relay: an idle connection ends at the idle limit, traffic pushes it back") {
  wiring w;
  outcome out;
  std::string at_upstream;
  spawn(w.io, run_relay(w, out, 300ms));
  spawn(w.io, [](wiring& ws) -> asio::awaitable<void> {
    asio::steady_timer t(ws.io);
    for (int i = 0; i < 5; ++i) {  // a byte every 150 ms: never idle for 300 ms
      t.expires_after(150ms);
      co_await t.async_wait(nothrow);
      co_await asio::async_write(ws.client, asio::buffer("x", 1), nothrow);
    }
  }(w));
  spawn(w.io, drain(w.upstream, at_upstream));
  w.io.run_for(10s);
  REQUIRE(out.totals.has_value());
  CHECK(out.totals->idle_timeout);
  CHECK(out.totals->up == 5);
  CHECK(at_upstream == "xxxxx");  // and the upstream saw the end
  CHECK(out.took >= 750ms + 300ms);
  CHECK(out.took < 3s);
}

TEST_CASE("relay: relays with different idle limits on one loop each end at their own") {
  wiring a;  // and a second pair of pairs on the same loop
  tcp::socket b_client(a.io), b_relay_client(a.io), b_relay_upstream(a.io), b_upstream(a.io);
  std::tie(b_relay_client, b_client) = socket_pair(a.io);
  std::tie(b_relay_upstream, b_upstream) = socket_pair(a.io);
  outcome slow, fast;
  spawn(a.io, run_relay(a, slow, 900ms));
  spawn(a.io, [](tcp::socket& c, tcp::socket& u, outcome& out) -> asio::awaitable<void> {
    const auto started = std::chrono::steady_clock::now();
    out.totals = co_await relay(c, u, 200ms);
    out.took = std::chrono::steady_clock::now() - started;
  }(b_relay_client, b_relay_upstream, fast));
  a.io.run_for(10s);  // returns once both are over: no timer wait is left behind
  REQUIRE(slow.totals.has_value());
  REQUIRE(fast.totals.has_value());
  CHECK(slow.totals->idle_timeout);
  CHECK(fast.totals->idle_timeout);
  CHECK(fast.took >= 200ms);
  CHECK(fast.took < 700ms);
  CHECK(slow.took >= 900ms);
  CHECK(slow.took < 3s);
}

TEST_CASE("relay: the meter cuts both ways") {
  wiring w;
  counting_meter meter(10);
  outcome out;
  std::string at_client, at_upstream;
  boost::system::error_code client_end, upstream_end;
  spawn(w.io, run_relay(w, out, 5s, &meter));
  spawn(w.io, [](wiring& ws, std::string& got, boost::system::error_code& end) -> asio::awaitable<void> {
    const std::string hundred(100, 'a');
    co_await asio::async_write(ws.client, asio::buffer(hundred), nothrow);
    got = co_await read_all(ws.client, &end);
  }(w, at_client, client_end));
  spawn(w.io, drain(w.upstream, at_upstream, &upstream_end));
  w.io.run_for(10s);
  REQUIRE(out.totals.has_value());
  CHECK(out.totals->cut);
  CHECK_FALSE(out.totals->idle_timeout);
  CHECK(out.totals->up == 100);
  // Cut, not finished: both ends learn it from a reset.
  CHECK(client_end == asio::error::connection_reset);
  CHECK(upstream_end == asio::error::connection_reset);
}

// A meter with a budget, as a session's limiter is: the relay asks its room.
struct budget_meter final : relay_meter {
  std::uint64_t budget;
  std::uint64_t seen = 0;
  explicit budget_meter(std::uint64_t b) : budget(b) {}
  bool moved(bool up, std::uint64_t bytes) noexcept override {
    if (!up) return true;
    seen += bytes;
    return seen <= budget;
  }
  std::uint64_t room(bool up) const noexcept override {
    if (!up) return std::numeric_limits<std::uint64_t>::max();
    return seen >= budget ? 0 : budget - seen;
  }
};

TEST_CASE("relay: a budget cuts a bulk stream at most one byte past it, whatever a step could hold") {
  wiring w;
  budget_meter meter(100000);
  outcome out;
  std::string at_upstream;
  boost::system::error_code upstream_end;
  spawn(w.io, run_relay(w, out, 5s, &meter));
  spawn(w.io, [](wiring& ws) -> asio::awaitable<void> {
    const std::string big = pattern(4 << 20, 'x');  // bulk: splice steps of up to a pipe's 1 MiB
    co_await asio::async_write(ws.client, asio::buffer(big), nothrow);
  }(w));
  spawn(w.io, drain(w.upstream, at_upstream, &upstream_end));
  w.io.run_for(10s);
  REQUIRE(out.totals.has_value());
  CHECK(out.totals->cut);
  CHECK(out.totals->up == 100001);
  // The reset may drop what the kernel still held for the upstream, never add to it.
  CHECK(at_upstream.size() <= 100001);
  CHECK(upstream_end == asio::error::connection_reset);
}

TEST_CASE("relay: a loop torn down mid-relay unwinds the waiting coroutine") {
  bool unwound = false;
  {
    wiring w;
    spawn(w.io, relay_then_mark(w, unwound));
    w.io.run_for(100ms);
    CHECK_FALSE(unwound);
  }  // the io_context goes with its pending waits (LeakSanitizer checks nothing is left)
  CHECK(unwound);
}

TEST_CASE("relay: a loop torn down while a way waits for the next edge of a socket it read empty unwinds too") {
  bool unwound = false;
  std::string at_upstream;
  {
    wiring w;
    spawn(w.io, relay_then_mark(w, unwound));
    asio::write(w.client, asio::buffer("x", 1));  // one short read, then the wait for more
    w.io.run_for(100ms);
    char got = 0;
    CHECK(w.upstream.read_some(asio::buffer(&got, 1)) == 1);  // the step ran
    CHECK(got == 'x');
    CHECK_FALSE(unwound);
  }
  CHECK(unwound);
}

namespace {

// Refuses requests for other.example.
struct host_judge final : airlock::proxy::request_gate::judge {
  unsigned request(const airlock::proxy::http_head::request& r, std::uint64_t) override {
    return r.host == "other.example" ? 403 : 0;
  }
  unsigned refuse(airlock::proxy::request_gate::unframed, const airlock::proxy::http_head::request*,
                  std::uint64_t) override {
    return 400;
  }
};

}  // namespace

TEST_CASE("relay: with a gate, a large body goes up whole, and after a refused request only the answers before it") {
  wiring w(either_way());
  host_judge judge;
  airlock::proxy::request_gate gate(judge);
  std::optional<relay_totals> totals;
  spawn(w.io, [](wiring& ws, airlock::proxy::request_gate& g, std::optional<relay_totals>& t) -> asio::awaitable<void> {
    t = co_await relay(ws.relay_client, ws.relay_upstream, 5s, nullptr, &g);
  }(w, gate, totals));
  const std::string body = pattern(200000, 'b');  // more than the copy buffer: the way stays a copy
  const std::string post = "POST / HTTP/1.1\r\nHost: a.example\r\nContent-Length: 200000\r\n\r\n" + body;
  const std::string refused = "GET / HTTP/1.1\r\nHost: other.example\r\n\r\n";
  std::string at_client;
  spawn(w.io,
        [](wiring& ws, std::string& got, const std::string& first, const std::string& second) -> asio::awaitable<void> {
          co_await asio::async_write(ws.client, asio::buffer(first + second), nothrow);
          got = co_await read_all(ws.client);
        }(w, at_client, post, refused));
  std::string at_upstream;
  boost::system::error_code upstream_end;
  spawn(w.io, [](wiring& ws, std::string& got, boost::system::error_code& end) -> asio::awaitable<void> {
    got = co_await read_all(ws.upstream, &end);  // ends at the FIN the refusal sent
    const std::string answer = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
    co_await asio::async_write(ws.upstream, asio::buffer(answer), nothrow);
    ws.upstream.close();
  }(w, at_upstream, upstream_end));
  // The relay ends when the upstream has closed, leaving the client open for the refusal.
  while (!totals && w.io.run_one_for(10s)) {
  }
  REQUIRE(totals.has_value());
  CHECK(at_upstream == post);
  CHECK(upstream_end == asio::error::eof);
  CHECK(gate.refused() == 403);
  CHECK(gate.requests() == 1);
  CHECK(totals->up == post.size());
  REQUIRE(w.relay_client.is_open());
  const std::string refusal = "HTTP/1.1 403 Forbidden\r\n\r\n";
  asio::write(w.relay_client, asio::buffer(refusal));
  w.relay_client.close();
  w.io.run_for(5s);
  CHECK(at_client == "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n" + refusal);
}

namespace {

// A tail for relay_owned: the two sockets, and where it says how it ended.
struct test_tail {
  tcp::socket client;
  tcp::socket upstream;
  std::optional<relay_totals>* ended;
  bool* destroyed;
  test_tail(tcp::socket c, tcp::socket u, std::optional<relay_totals>& e, bool& d)
      : client(std::move(c)), upstream(std::move(u)), ended(&e), destroyed(&d) {}
  test_tail(test_tail&& o) noexcept
      : client(std::move(o.client)),
        upstream(std::move(o.upstream)),
        ended(o.ended),
        destroyed(std::exchange(o.destroyed, nullptr)) {}
  ~test_tail() {
    if (destroyed) *destroyed = true;
  }
  relay_meter* meter() noexcept { return nullptr; }
  airlock::proxy::request_gate* gate() noexcept { return nullptr; }
  airlock::base::cut_switch* cut() noexcept { return nullptr; }
  void relayed(const relay_totals& t) noexcept { *ended = t; }
};

}  // namespace

TEST_CASE("relay_owned: the relay owns the sockets, says how it ended once, and lets go of them") {
  wiring w;
  std::optional<relay_totals> ended;
  bool destroyed = false;
  airlock::proxy::relay_owned(test_tail(std::move(w.relay_client), std::move(w.relay_upstream), ended, destroyed), 5s);
  CHECK_FALSE(destroyed);  // the moved-from tail said nothing: only the relay's own copy counts
  std::string at_client, at_upstream;
  spawn(w.io, [](wiring& ws, std::string& got) -> asio::awaitable<void> {
    const std::string hello = "hello";
    co_await asio::async_write(ws.client, asio::buffer(hello), nothrow);
    ws.client.shutdown(tcp::socket::shutdown_send);
    got = co_await read_all(ws.client);
  }(w, at_client));
  spawn(w.io, [](wiring& ws, std::string& got) -> asio::awaitable<void> {
    got = co_await read_all(ws.upstream);
    const std::string answer = "answer!";
    co_await asio::async_write(ws.upstream, asio::buffer(answer), nothrow);
    ws.upstream.shutdown(tcp::socket::shutdown_send);
  }(w, at_upstream));
  w.io.run_for(10s);
  REQUIRE(ended.has_value());
  CHECK(ended->up == 5);
  CHECK(ended->down == 7);
  CHECK(ended->reset == reset_by::none);
  CHECK(at_upstream == "hello");
  CHECK(at_client == "answer!");
  CHECK(destroyed);  // freed once over, with nothing left pending
}

TEST_CASE("relay_owned: a loop torn down mid-relay destroys the tail without saying it ended") {
  std::optional<relay_totals> ended;
  bool destroyed = false;
  {
    wiring w;
    airlock::proxy::relay_owned(test_tail(std::move(w.relay_client), std::move(w.relay_upstream), ended, destroyed),
                                60s);
    w.io.run_for(100ms);
    CHECK_FALSE(destroyed);
  }  // the io_context goes with the relay's pending waits (LeakSanitizer checks nothing is left)
  CHECK(destroyed);
  CHECK_FALSE(ended.has_value());
}
