// steps::connect_any on loopback: the first address that answers is the one connected
// (one that refuses is skipped), nobody answering leaves the socket closed, a connect
// answered late is waited for, one that never completes ends at the deadline, and one
// that cannot get a socket says airlock was out of descriptors. Given the client's first
// bytes, it sends them as its check that the connect was established, or leaves them to
// the caller when it had to wait.
#include "proxy/steps.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/steady_timer.hpp>

#include <doctest/doctest.h>

#include <chrono>
#include <exception>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

namespace {

namespace asio = boost::asio;
using asio::ip::tcp;
using airlock::proxy::steps::connect_any;
using airlock::proxy::steps::upstream_reached;
using namespace std::chrono_literals;

struct attempt {
  std::optional<upstream_reached> reached;  // empty: the coroutine did not finish
  std::chrono::steady_clock::duration took{};
};

void run_connect(asio::io_context& io, tcp::socket& upstream, std::vector<asio::ip::address> addresses,
                 std::uint16_t port, std::chrono::steady_clock::duration limit, attempt& out,
                 std::span<const std::byte> first = {}) {
  asio::co_spawn(
      io,
      [&upstream, addresses, port, limit, &out, first]() -> asio::awaitable<void> {
        const auto started = std::chrono::steady_clock::now();
        out.reached = co_await connect_any(upstream, addresses, port, limit, first);
        out.took = std::chrono::steady_clock::now() - started;
      },
      [](std::exception_ptr e) {
        if (e) std::rethrow_exception(e);
      });
  io.run_for(10s);
}

// A port bound but not listening on `address`: a connect there is refused at once.
tcp::acceptor refusing(asio::io_context& io, const asio::ip::address& address, std::uint16_t port = 0) {
  tcp::acceptor a(io);
  a.open(tcp::v4());
  a.bind(tcp::endpoint(address, port));
  return a;
}

const auto loopback = asio::ip::make_address("127.0.0.1");
const auto loopback2 = asio::ip::make_address("127.0.0.2");

const std::string hello = "GET / HTTP/1.1\r\nHost: example.test\r\n\r\n";
std::span<const std::byte> bytes_of(const std::string& s) { return std::as_bytes(std::span(s)); }

// What `listener`'s next connection (waiting already) has sent so far, up to `n` bytes.
// Nothing here waits: a failed check before must not hang the test.
std::string received(tcp::acceptor& listener, std::size_t n) {
  listener.non_blocking(true);
  boost::system::error_code ec;
  auto s = listener.accept(ec);
  if (ec) return "(no connection)";
  s.non_blocking(true);
  std::string got(n, '\0');
  got.resize(asio::read(s, asio::buffer(got), ec));
  return got;
}

}  // namespace

TEST_CASE("connect_any: an address that refuses is skipped for the next one that answers") {
  asio::io_context io;
  tcp::acceptor listening(io, tcp::endpoint(loopback2, 0));
  const auto port = listening.local_endpoint().port();
  auto closed = refusing(io, loopback, port);  // the same port on the first address: refused
  tcp::socket upstream(io);
  attempt out;
  run_connect(io, upstream, {loopback, loopback2}, port, 5s, out);
  REQUIRE(out.reached.has_value());
  REQUIRE(out.reached->at.has_value());
  CHECK(**out.reached == tcp::endpoint(loopback2, port));
  REQUIRE(upstream.is_open());
  CHECK(upstream.remote_endpoint() == tcp::endpoint(loopback2, port));
  int nodelay = 0;
  socklen_t size = sizeof nodelay;
  REQUIRE(::getsockopt(upstream.native_handle(), IPPROTO_TCP, TCP_NODELAY, &nodelay, &size) == 0);
  CHECK(nodelay == 1);  // small writes are not held back by Nagle
  CHECK(upstream.native_non_blocking());
  CHECK((::fcntl(upstream.native_handle(), F_GETFL) & O_NONBLOCK) != 0);  // so, too, for the kernel
  CHECK((::fcntl(upstream.native_handle(), F_GETFD) & FD_CLOEXEC) != 0);  // a child airlock starts never holds it
  listening.non_blocking(true);  // a failed check above must not hang the test here
  boost::system::error_code ec;
  listening.accept(ec);
  CHECK_FALSE(ec);  // and the listener has it
}

TEST_CASE("connect_any: the first bytes go with the check that the connect was established, past a refusing address") {
  asio::io_context io;
  tcp::acceptor listening(io, tcp::endpoint(loopback2, 0));
  const auto port = listening.local_endpoint().port();
  auto closed = refusing(io, loopback, port);
  tcp::socket upstream(io);
  attempt out;
  run_connect(io, upstream, {loopback, loopback2}, port, 5s, out, bytes_of(hello));
  REQUIRE(out.reached.has_value());
  REQUIRE(out.reached->at.has_value());
  CHECK(**out.reached == tcp::endpoint(loopback2, port));
  CHECK(out.reached->sent_first == hello.size());  // a local link: established when connect() returned
  CHECK(received(listening, hello.size()) == hello);
}

TEST_CASE("connect_any: when every address refuses, nothing is reached and the socket is closed") {
  asio::io_context io;
  auto closed = refusing(io, loopback);
  const auto port = closed.local_endpoint().port();
  auto closed2 = refusing(io, loopback2, port);
  tcp::socket upstream(io);
  attempt out;
  run_connect(io, upstream, {loopback, loopback2}, port, 5s, out);
  REQUIRE(out.reached.has_value());
  CHECK_FALSE(out.reached->at.has_value());
  CHECK_FALSE(out.reached->out_of_descriptors);  // refused is the upstream's answer, not airlock's limit
  CHECK_FALSE(upstream.is_open());
  CHECK(out.took < 4s);
}

TEST_CASE("connect_any: no addresses, nothing reached") {
  asio::io_context io;
  tcp::socket upstream(io);
  attempt out;
  run_connect(io, upstream, {}, 443, 5s, out);
  REQUIRE(out.reached.has_value());
  CHECK_FALSE(out.reached->at.has_value());
  CHECK_FALSE(upstream.is_open());
}

// A listener whose accept queue is full drops the next SYN: a connect to it hangs until
// the client sends its SYN again, after a second.
struct full_listener {
  tcp::acceptor acceptor;
  tcp::socket queued;
  std::uint16_t port = 0;
  explicit full_listener(asio::io_context& io) : acceptor(io), queued(io) {
    acceptor.open(tcp::v4());
    acceptor.bind(tcp::endpoint(loopback, 0));
    acceptor.listen(0);
    port = acceptor.local_endpoint().port();
    queued.connect(tcp::endpoint(loopback, port));  // takes the queue's only place
  }
};

TEST_CASE("connect_any: a connect still under way when connect() returns is waited for") {
  // Not answered at once, so not established when connect() returns; the queue's place
  // frees up and the SYN sent again is answered.
  std::span<const std::byte> first;
  SUBCASE("with no first bytes") {}
  SUBCASE("with first bytes: its send finds the SYN unanswered and leaves them to the caller") {
    first = bytes_of(hello);
  }
  asio::io_context io;
  full_listener full(io);
  asio::steady_timer later(io, 100ms);
  later.async_wait([&](boost::system::error_code) { full.acceptor.accept(); });
  tcp::socket upstream(io);
  attempt out;
  run_connect(io, upstream, {loopback}, full.port, 5s, out, first);
  REQUIRE(out.reached.has_value());
  REQUIRE(out.reached->at.has_value());
  CHECK(**out.reached == tcp::endpoint(loopback, full.port));
  CHECK(upstream.remote_endpoint() == tcp::endpoint(loopback, full.port));
  CHECK(out.took >= 500ms);  // it waited for the SYN's retry
  CHECK(out.reached->sent_first == 0);
}

TEST_CASE("connect_any: a connect that never completes ends at the deadline") {
  asio::io_context io;
  full_listener full(io);
  const auto port = full.port;
  tcp::socket upstream(io);
  attempt out;
  run_connect(io, upstream, {loopback}, port, 200ms, out);
  REQUIRE(out.reached.has_value());
  CHECK_FALSE(out.reached->at.has_value());
  CHECK_FALSE(upstream.is_open());
  CHECK(out.took >= 200ms);
  CHECK(out.took < 900ms);  // the deadline ended it, not the SYN's retry
}

TEST_CASE("connect_any: out of descriptors for the socket, it says so and tries no further address") {
  // In a child under a small limit of its own, so the test binary keeps its descriptors.
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    int wrong = 0;  // each step that goes wrong sets its own bit in the exit status
    const rlimit small{48, 48};
    if (::setrlimit(RLIMIT_NOFILE, &small) != 0) ::_exit(64);
    asio::io_context io;
    tcp::acceptor listening(io, tcp::endpoint(loopback, 0));
    const auto port = listening.local_endpoint().port();
    for (int i = 0; i < 64 && ::open("/dev/null", O_RDONLY | O_CLOEXEC) >= 0; ++i) {
    }
    tcp::socket upstream(io);
    attempt out;
    run_connect(io, upstream, {loopback, loopback}, port, 5s, out);
    if (!out.reached) wrong |= 1;
    else {
      if (out.reached->at) wrong |= 2;
      if (!out.reached->out_of_descriptors) wrong |= 4;
    }
    if (upstream.is_open()) wrong |= 8;
    ::_exit(wrong);
  }
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
}
