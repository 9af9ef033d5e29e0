// Real lookups: sockets of this very process, found through sock_diag and /proc. Tests that
// need another network namespace (setns needs CAP_SYS_ADMIN) are skipped when not root.
#include "attribution/engine.hpp"
#include "attribution/finder.hpp"
#include "base/deadline.hpp"

#include <doctest/doctest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ip/udp.hpp>
#include <boost/asio/ip/v6_only.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <net/if.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <future>
#include <optional>
#include <thread>

namespace at = airlock::attribution;
namespace asio = boost::asio;
using asio::ip::tcp;
using asio::ip::udp;
using namespace std::chrono_literals;

namespace {

const std::string self_netns = "/proc/self/ns/net";
const bool is_root = ::geteuid() == 0;

// A connected TCP pair on 127.0.0.1, port 0.
struct tcp_pair {
  asio::io_context io;
  tcp::acceptor acceptor{io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0)};
  tcp::socket client{io};
  tcp::socket server{io};
  tcp_pair() {
    client.connect(acceptor.local_endpoint());
    acceptor.accept(server);
  }
  // As the proxy would see it: the accepted socket's peer, and where the client connected.
  at::socket_key key() const { return at::socket_key::tcp(server.remote_endpoint(), server.local_endpoint()); }
};

void require_self(const at::lookup_result& r) {
  INFO("unknown: " << r.unknown);
  REQUIRE_FALSE(r.chain.empty());
  CHECK(r.unknown.empty());
  CHECK(r.chain[0].pid == ::getpid());
  CHECK(std::string("unit_attribution").starts_with(r.chain[0].comm));
  CHECK(r.chain[0].cmdline.find("unit_attribution") != std::string::npos);
  // The parents are whatever started the test (ctest, a shell); all in this namespace.
  CHECK(r.chain.size() <= at::max_chain);
  if (r.chain.size() > 1) CHECK(r.chain[1].pid == ::getppid());
}

// A finder whose worker is held inside a completion until release(): lets a test queue up
// requests, or time out, deterministically.
struct held_worker {
  std::promise<void> go;
  void hold(at::finder& f) {
    // The completion owns what it waits on: it may still be returning when the test ends.
    auto entered = std::make_shared<std::promise<void>>();
    auto is_in = entered->get_future();
    f.lookup(self_netns, at::socket_key{}, [entered, go_on = go.get_future().share()](at::lookup_result) {
      entered->set_value();
      go_on.wait();
    });
    is_in.wait();
  }
  void release() { go.set_value(); }
};

}  // namespace

TEST_CASE("engine: a TCP client socket of this process, in this namespace") {
  tcp_pair pair;
  at::engine e;
  require_self(e.lookup(self_netns, pair.key()));
  CHECK(e.open_namespaces() == 1);
  // The listener side is this process too, seen from its own end.
  require_self(e.lookup(self_netns, at::socket_key::tcp(pair.server.local_endpoint(), pair.server.remote_endpoint())));
  e.forget(self_netns);
  CHECK(e.open_namespaces() == 0);
}

TEST_CASE("engine: UDP sockets, unconnected and connected, as the DNS server sees them") {
  asio::io_context io;
  udp::socket server(io, udp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
  at::engine e;

  SUBCASE("unconnected (sendto), like most stub resolvers") {
    udp::socket client(io, udp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
    require_self(e.lookup(self_netns, at::socket_key::udp(client.local_endpoint(), server.local_endpoint())));
  }
  SUBCASE("bound to the wildcard address") {
    udp::socket client(io, udp::endpoint(udp::v4(), 0));
    const udp::endpoint seen(asio::ip::make_address("127.0.0.1"), client.local_endpoint().port());
    require_self(e.lookup(self_netns, at::socket_key::udp(seen, server.local_endpoint())));
  }
  SUBCASE("connected, like glibc's resolver") {
    udp::socket client(io, udp::v4());
    client.connect(server.local_endpoint());
    require_self(e.lookup(self_netns, at::socket_key::udp(client.local_endpoint(), server.local_endpoint())));
  }
  SUBCASE("connected, but the server saw another destination port (a redirect)") {
    udp::socket client(io, udp::v4());
    client.connect(server.local_endpoint());
    const udp::endpoint redirected(server.local_endpoint().address(), 53);
    require_self(e.lookup(self_netns, at::socket_key::udp(client.local_endpoint(), redirected)));
  }
  SUBCASE("an IPv6 dual-stack socket talking IPv4") {
    udp::socket client(io, udp::v6());
    client.set_option(asio::ip::v6_only(false));
    client.connect(udp::endpoint(asio::ip::make_address("::ffff:127.0.0.1"), server.local_endpoint().port()));
    const udp::endpoint seen(asio::ip::make_address("127.0.0.1"), client.local_endpoint().port());
    require_self(e.lookup(self_netns, at::socket_key::udp(seen, server.local_endpoint())));
  }
}

TEST_CASE("engine: closed sockets and missing namespaces say why") {
  at::engine e;
  asio::io_context io;
  SUBCASE("UDP socket closed") {
    udp::endpoint was;
    udp::socket server(io, udp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
    {
      udp::socket client(io, udp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
      was = client.local_endpoint();
    }
    const auto r = e.lookup(self_netns, at::socket_key::udp(was, server.local_endpoint()));
    CHECK(r.chain.empty());
    CHECK(r.unknown == at::cause::socket_not_found);
  }
  SUBCASE("TCP socket closed while the peer still holds its end (FIN_WAIT, no file)") {
    tcp_pair pair;
    const auto key = pair.key();
    pair.client.close();
    const auto r = e.lookup(self_netns, key);
    CHECK(r.chain.empty());
    CHECK((r.unknown == at::cause::socket_closed || r.unknown == at::cause::socket_not_found));
  }
  SUBCASE("TCP socket never there") {
    const auto key = at::socket_key::make(at::transport::tcp, asio::ip::make_address("127.0.0.1"), 1,
                                          asio::ip::make_address("127.0.0.1"), 2);
    CHECK(e.lookup(self_netns, key).unknown == at::cause::socket_not_found);
  }
  SUBCASE("no such namespace, or not a namespace") {
    tcp_pair pair;
    CHECK(e.lookup("/run/netns/airlock-does-not-exist", pair.key()).unknown == at::cause::netns_not_available);
    if (is_root) {
      // Only root gets as far as setns, which refuses a file that is not a namespace.
      CHECK(e.lookup("/proc/self/stat", pair.key()).unknown == at::cause::netns_not_available);
    }
    CHECK(e.open_namespaces() == 0);
  }
}

TEST_CASE("root-only tests are reported, not passed") {
  if (!is_root) MESSAGE("not root: \"another network namespace\" is skipped (setns needs CAP_SYS_ADMIN)");
}

TEST_CASE("engine: another network namespace, entered with setns" * doctest::skip(!is_root)) {
  // A child process in a namespace of its own, holding a TCP connection to itself on its
  // loopback: the lookup must setns there, find the child, and stop the chain at the child
  // because its parent (this process) is outside.
  int to_parent[2];
  int to_child[2];
  REQUIRE(::pipe(to_parent) == 0);
  REQUIRE(::pipe(to_child) == 0);
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    // Only plain syscalls here: the parent may have threads.
    ::close(to_parent[0]);
    ::close(to_child[1]);  // else the read below never sees the parent close its end
    if (::unshare(CLONE_NEWNET) != 0) ::_exit(2);
    const int ctl = ::socket(AF_INET, SOCK_DGRAM, 0);
    ifreq ifr{};
    std::strcpy(ifr.ifr_name, "lo");
    ifr.ifr_flags = IFF_UP;
    if (::ioctl(ctl, SIOCSIFFLAGS, &ifr) != 0) ::_exit(3);
    const int listener = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (::bind(listener, reinterpret_cast<sockaddr*>(&addr), len) != 0 || ::listen(listener, 1) != 0) ::_exit(4);
    ::getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len);
    const int client = ::socket(AF_INET, SOCK_STREAM, 0);
    if (::connect(client, reinterpret_cast<sockaddr*>(&addr), len) != 0) ::_exit(5);
    sockaddr_in local{};
    socklen_t local_len = sizeof local;
    ::getsockname(client, reinterpret_cast<sockaddr*>(&local), &local_len);
    const std::uint16_t ports[2] = {ntohs(local.sin_port), ntohs(addr.sin_port)};
    if (::write(to_parent[1], ports, sizeof ports) != sizeof ports) ::_exit(6);
    char c;
    (void)::read(to_child[0], &c, 1);  // until the parent is done (or gone)
    ::_exit(0);
  }
  ::close(to_parent[1]);
  ::close(to_child[0]);
  std::uint16_t ports[2] = {};
  const bool got_ports = ::read(to_parent[0], ports, sizeof ports) == sizeof ports;

  std::optional<at::lookup_result> r;
  std::optional<at::lookup_result> from_here;
  at::engine e;
  if (got_ports) {
    const auto lo = asio::ip::make_address("127.0.0.1");
    const auto key = at::socket_key::make(at::transport::tcp, lo, ports[0], lo, ports[1]);
    r = e.lookup("/proc/" + std::to_string(child) + "/ns/net", key);
    from_here = e.lookup(self_netns, key);  // the same 4-tuple does not exist here
  }
  const auto kept = e.open_namespaces();
  ::close(to_child[1]);
  int status = 0;
  ::waitpid(child, &status, 0);
  ::close(to_parent[0]);

  REQUIRE_MESSAGE(got_ports, "child exit status " << status);
  INFO("unknown: " << r->unknown);
  REQUIRE(r->chain.size() == 1);
  CHECK(r->chain[0].pid == child);
  CHECK(from_here->unknown == at::cause::socket_not_found);
  // The child's namespace died with it; the sweep lets go of its socket (which would
  // otherwise keep the namespace alive), and keeps ours.
  CHECK(kept == 2);
  e.sweep();
  CHECK(e.open_namespaces() == 1);
}

TEST_CASE("finder: lookup() completes on the worker thread") {
  tcp_pair pair;
  at::finder f;
  std::promise<std::pair<at::lookup_result, std::thread::id>> done;
  f.lookup(self_netns, pair.key(), [&](at::lookup_result r) {
    done.set_value({std::move(r), std::this_thread::get_id()});
  });
  auto fut = done.get_future();
  REQUIRE(fut.wait_for(10s) == std::future_status::ready);
  auto [r, thread] = fut.get();
  require_self(r);
  CHECK(thread != std::this_thread::get_id());
}

TEST_CASE("finder: async_lookup resumes the coroutine on its own executor") {
  tcp_pair pair;
  asio::io_context io;
  at::finder f;  // destroyed before io: the worker may still be returning from its post()
  std::optional<at::lookup_result> got;
  std::thread::id resumed_on;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        got = co_await at::async_lookup(f, self_netns, pair.key(), asio::use_awaitable);
        resumed_on = std::this_thread::get_id();
      },
      [](std::exception_ptr e) {
        if (e) std::rethrow_exception(e);
      });
  // run() returns only after the result came back: the pending lookup counts as work.
  io.run_for(10s);
  REQUIRE(got.has_value());
  require_self(*got);
  CHECK(resumed_on == std::this_thread::get_id());
}

TEST_CASE("finder: a caller that stops waiting gets control back at its deadline") {
  tcp_pair pair;
  asio::io_context io;
  held_worker held;
  auto f = std::make_unique<at::finder>();
  held.hold(*f);
  std::optional<std::optional<at::lookup_result>> got;
  const auto start = std::chrono::steady_clock::now();
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        got = co_await airlock::base::with_deadline(at::async_lookup(*f, self_netns, pair.key(), asio::use_awaitable),
                                                    20ms);
      },
      [](std::exception_ptr e) {
        if (e) std::rethrow_exception(e);
      });
  io.run_for(10s);
  const auto took = std::chrono::steady_clock::now() - start;
  REQUIRE(got.has_value());
  CHECK_FALSE(got->has_value());  // timed out
  CHECK(took < 2s);
  // The worker gets to the abandoned request later; its result goes nowhere, and nothing
  // leaks or touches the finished coroutine (ASan watches).
  held.release();
  f.reset();
  io.restart();
  io.poll();
}

TEST_CASE("finder: a full queue completes at once with \"queue full\"") {
  // Declared before the finder: the worker still calls `record` while ~finder joins it.
  std::vector<std::string> results;
  std::mutex m;
  auto record = [&](at::lookup_result r) {
    std::lock_guard lock(m);
    results.push_back(r.unknown);
  };
  held_worker held;
  at::finder f(at::finder_options{.queue_capacity = 2});
  held.hold(f);
  f.lookup("/nonexistent", {}, record);
  f.lookup("/nonexistent", {}, record);
  f.lookup("/nonexistent", {}, record);  // third: over capacity
  {
    std::lock_guard lock(m);
    REQUIRE(results.size() == 1);
    CHECK(results[0] == at::cause::queue_full);
  }
  held.release();
}

TEST_CASE("finder: queued requests complete once each, even when the finder goes first") {
  std::atomic<int> calls{0};
  std::thread releaser;
  {
    held_worker held;  // outlives the finder: the releaser uses it while ~finder waits
    at::finder f;
    held.hold(f);
    for (int i = 0; i < 5; ++i)
      f.lookup("/nonexistent", {}, [&](at::lookup_result r) {
        CHECK_FALSE(r.unknown.empty());
        ++calls;
      });
    releaser = std::thread([&held] {
      std::this_thread::sleep_for(50ms);
      held.release();
    });
  }  // ~finder: joins after the held completion returns
  releaser.join();
  CHECK(calls == 5);
}

TEST_CASE("finder: a cancelled request is not looked up") {
  std::promise<std::string> done;
  held_worker held;
  at::finder f;
  held.hold(f);
  f.lookup(
      self_netns, {}, [&](at::lookup_result r) { done.set_value(r.unknown); }, [] { return false; });
  held.release();
  auto fut = done.get_future();
  REQUIRE(fut.wait_for(10s) == std::future_status::ready);
  CHECK(fut.get() == at::cause::timed_out);
}
