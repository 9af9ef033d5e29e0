// hello: real ClientHellos cut into TCP segments, optionally trickled slowly, at a fixed
// number in flight. What a proxy pays for reassembling a hello across reads, and whether
// slow senders hold up everyone else, is what wrk cannot show.
#include "base/deadline.hpp"
#include "base/spawn.hpp"
#include "bench/loadgen/loadgen.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/write.hpp>

#include <algorithm>
#include <array>
#include <cstdio>

namespace airlock::bench {

namespace {

namespace asio = boost::asio;
using asio::ip::tcp;
using base::nothrow;
using base::with_deadline;
using clock = std::chrono::steady_clock;

constexpr auto connect_limit = std::chrono::seconds(5);
constexpr auto write_limit = std::chrono::seconds(5);
constexpr auto answer_limit = std::chrono::seconds(10);
// A few distinct hellos (each has its own random and key share), used in turn.
constexpr std::size_t hello_pool = 8;

struct hello_state {
  const options& o;
  std::vector<std::vector<std::uint8_t>> hellos;
  clock::time_point end;
  std::size_t attempts = 0;
  std::size_t answered = 0;  // the server's first bytes were a TLS handshake record
  std::size_t refused = 0;   // a TLS alert (what a filtering proxy sends for a denied name)
  std::size_t failed = 0;    // timeout, reset, or closed without a word
  std::vector<double> answer_ms;
  std::string first_error;

  void fail(std::string what) {
    ++failed;
    if (first_error.empty()) first_error = std::move(what);
  }
};

asio::awaitable<void> one_hello(hello_state& s, const std::vector<std::uint8_t>& hello) {
  const auto executor = co_await asio::this_coro::executor;
  tcp::socket socket(executor);
  const auto start = clock::now();
  const auto connected = co_await with_deadline(socket.async_connect(s.o.target, nothrow), connect_limit);
  if (!connected || std::get<0>(*connected))
    co_return s.fail(connected ? std::get<0>(*connected).message() : "connect timeout");
  // Without Nagle each write leaves as its own segment.
  socket.set_option(tcp::no_delay(true));
  const std::size_t pieces = std::min(s.o.segments, hello.size());
  for (std::size_t i = 0; i < pieces; ++i) {
    const std::size_t from = hello.size() * i / pieces;
    const std::size_t to = hello.size() * (i + 1) / pieces;
    const auto written = co_await with_deadline(
        asio::async_write(socket, asio::buffer(hello.data() + from, to - from), nothrow), write_limit);
    if (!written || std::get<0>(*written)) co_return s.fail("hello not written");
    if (s.o.gap.count() > 0 && i + 1 < pieces) {
      asio::steady_timer pause(executor, s.o.gap);
      co_await pause.async_wait(nothrow);
    }
  }
  std::array<std::uint8_t, 512> reply{};
  const auto read = co_await with_deadline(socket.async_read_some(asio::buffer(reply), nothrow), answer_limit);
  if (!read) co_return s.fail("no answer in time");
  const auto [ec, n] = *read;
  if (ec || n == 0) co_return s.fail(ec ? ec.message() : "closed");
  if (reply[0] == 0x15) {
    ++s.refused;
    co_return;
  }
  if (reply[0] != 0x16) co_return s.fail("answer is not TLS");
  ++s.answered;
  s.answer_ms.push_back(std::chrono::duration<double, std::milli>(clock::now() - start).count());
  // Reset instead of FIN: the origin aborts the handshake either way, and no TIME_WAIT
  // piles up on this side at thousands of connections per second.
  socket.set_option(asio::socket_base::linger(true, 0));
}

asio::awaitable<void> worker(hello_state& s) {
  while (clock::now() < s.end) {
    const auto& hello = s.hellos[s.attempts % s.hellos.size()];
    ++s.attempts;
    co_await one_hello(s, hello);
  }
}

double percentile(std::vector<double>& v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const auto at = static_cast<std::size_t>(p * static_cast<double>(v.size() - 1) + 0.5);
  return v[std::min(at, v.size() - 1)];
}

void report_errors(const char* what) { std::fprintf(stderr, "bench_loadgen: %s\n", what); }

}  // namespace

int run_hello(const options& o) {
  hello_state s{o, {}, {}, 0, 0, 0, 0, {}, {}};
  for (std::size_t i = 0; i < hello_pool; ++i) s.hellos.push_back(openssl_client_hello(o.sni));
  asio::io_context io;
  const auto start = clock::now();
  s.end = start + o.duration;
  for (std::size_t i = 0; i < o.concurrency; ++i) base::spawn_session(io.get_executor(), worker(s), report_errors);
  io.run();
  const double elapsed = std::chrono::duration<double>(clock::now() - start).count();
  std::printf("attempts=%zu answered=%zu refused=%zu failed=%zu elapsed_s=%.2f answered_per_s=%.1f p50_ms=%.2f "
              "p99_ms=%.2f hello_bytes=%zu first_error=\"%s\"\n",
              s.attempts, s.answered, s.refused, s.failed, elapsed, static_cast<double>(s.answered) / elapsed,
              percentile(s.answer_ms, 0.50), percentile(s.answer_ms, 0.99), s.hellos.front().size(),
              s.first_error.c_str());
  return s.answered > 0 ? 0 : 1;
}

}  // namespace airlock::bench
