#include "proxy/relay.hpp"

#include "core/deadline.hpp"

#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/write.hpp>

#include <array>

namespace airlock::proxy {
namespace {

namespace asio = boost::asio;
using asio::ip::tcp;
using core::nothrow;
using clock = std::chrono::steady_clock;

// Copies one direction until EOF or error. The buffer lives in this coroutine's frame,
// so it exists only while the relay runs.
asio::awaitable<void> pump(tcp::socket& from, tcp::socket& to, std::uint64_t& count, clock::time_point& deadline,
                           clock::duration idle_limit) {
  std::array<std::byte, 16384> buf;
  for (;;) {
    auto [ec, n] = co_await from.async_read_some(asio::buffer(buf), nothrow);
    if (ec) {
      boost::system::error_code ignored;
      if (ec == asio::error::eof) {
        to.shutdown(tcp::socket::shutdown_send, ignored);  // pass the half-close on
      } else {
        // A reset or a failure: the other direction has nothing left to say either.
        from.shutdown(tcp::socket::shutdown_both, ignored);
        to.shutdown(tcp::socket::shutdown_both, ignored);
      }
      co_return;
    }
    deadline = clock::now() + idle_limit;
    auto [wec, written] = co_await asio::async_write(to, asio::buffer(buf.data(), n), nothrow);
    count += written;
    if (wec) {
      boost::system::error_code ignored;
      from.shutdown(tcp::socket::shutdown_both, ignored);
      to.shutdown(tcp::socket::shutdown_both, ignored);
      co_return;
    }
    deadline = clock::now() + idle_limit;
  }
}

// Sleeps until the shared deadline stops moving forward; one timer per connection,
// woken at most once per idle period, not once per read.
asio::awaitable<void> watchdog(clock::time_point& deadline) {
  asio::steady_timer timer(co_await asio::this_coro::executor);
  for (auto now = clock::now(); deadline > now; now = clock::now()) {
    timer.expires_at(deadline);
    auto [ec] = co_await timer.async_wait(nothrow);
    if (ec == asio::error::operation_aborted) co_return;  // the relay ended first
  }
}

}  // namespace

asio::awaitable<relay_totals> relay(tcp::socket& client, tcp::socket& upstream, clock::duration idle_limit) {
  using namespace asio::experimental::awaitable_operators;
  relay_totals totals;
  auto deadline = clock::now() + idle_limit;
  auto outcome = co_await ((pump(client, upstream, totals.up, deadline, idle_limit) &&
                            pump(upstream, client, totals.down, deadline, idle_limit)) ||
                           watchdog(deadline));
  totals.idle_timeout = outcome.index() == 1;
  co_return totals;
}

}  // namespace airlock::proxy
