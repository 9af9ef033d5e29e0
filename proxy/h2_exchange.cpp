#include "proxy/h2_exchange.hpp"

#include "base/deadline.hpp"
#include "proxy/h2_bridge.hpp"

#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/write.hpp>

#include <array>
#include <span>

namespace airlock::proxy {

namespace asio = boost::asio;
namespace beast = boost::beast;
using base::nothrow;

namespace {

class h2_driver {
 public:
  h2_driver(served_client_tls& client, served_upstream_tls& upstream, exchange_setup& x)
      : client_(client), upstream_(upstream), bridge_(x), idle_(x.idle) {}

  asio::awaitable<void> run() {
    using namespace asio::experimental::awaitable_operators;
    co_await flush_both();  // the connection preface and SETTINGS, both ways
    co_await (read_client() && read_upstream());
  }

  h2_bridge& bridge() { return bridge_; }

 private:
  // Until the sandbox's side is over; then the origin's reader is woken to end too.
  asio::awaitable<void> read_client() {
    std::array<std::byte, 16 * 1024> buf;
    for (;;) {
      beast::get_lowest_layer(client_).expires_after(idle_);
      auto [ec, n] = co_await client_.async_read_some(asio::buffer(buf), nothrow);
      if (!ec && !bridge_.from_client(std::span(buf.data(), n))) {
        // The sandbox broke the protocol or a bound (a flood): its GOAWAY, briefly, and no
        // more reading. A writer already stuck on a peer that does not read is cut below.
        beast::get_lowest_layer(client_).expires_after(std::chrono::seconds(1));
        co_await flush_both();
        break;
      }
      if (ec) bridge_.client_gone();
      co_await flush_both();
      if (ec || bridge_.done()) break;
    }
    over_ = true;
    // Whatever either side still waits on ends now (the origin's reader, a stuck writer).
    beast::get_lowest_layer(upstream_).cancel();
    beast::get_lowest_layer(client_).cancel();
  }

  // Until the origin closes (what it left unanswered gets airlock's 502), or the exchange is over.
  asio::awaitable<void> read_upstream() {
    std::array<std::byte, 16 * 1024> buf;
    while (!over_) {
      beast::get_lowest_layer(upstream_).expires_after(idle_);
      auto [ec, n] = co_await upstream_.async_read_some(asio::buffer(buf), nothrow);
      if (over_) break;
      if (ec) bridge_.upstream_gone();
      else bridge_.from_upstream(std::span(buf.data(), n));
      co_await flush_both();
      if (ec) break;
    }
  }

  asio::awaitable<void> flush_both() {
    co_await flush(client_, out_client_, writing_client_, true);
    co_await flush(upstream_, out_upstream_, writing_upstream_, false);
  }

  // One writer per side: a second caller leaves it to the one writing, which takes what the
  // bridge has until it has nothing.
  template <typename Stream>
  asio::awaitable<void> flush(Stream& s, std::string& out, bool& writing, bool to_client) {
    if (writing) co_return;
    writing = true;
    for (;;) {
      out.clear();
      if (to_client) bridge_.to_client(out);
      else bridge_.to_upstream(out);
      if (out.empty()) break;
      beast::get_lowest_layer(s).expires_after(idle_);
      auto [ec, n] = co_await asio::async_write(s, asio::buffer(out), nothrow);
      if (ec) {
        if (to_client) bridge_.client_gone();
        else bridge_.upstream_gone();
        beast::get_lowest_layer(s).cancel();  // its reader ends too
        break;
      }
    }
    writing = false;
  }

  served_client_tls& client_;
  served_upstream_tls& upstream_;
  h2_bridge bridge_;
  const std::chrono::steady_clock::duration idle_;
  std::string out_client_, out_upstream_;
  bool writing_client_ = false, writing_upstream_ = false;
  bool over_ = false;
};

}  // namespace

asio::awaitable<exchange_totals> serve_h2(served_client_tls& client, served_upstream_tls& upstream, exchange_setup& x,
                                          std::string& failure) {
  h2_driver driver(client, upstream, x);
  co_await driver.run();
  driver.bridge().end();
  failure = driver.bridge().failure();
  auto totals = driver.bridge().totals();
  totals.clean = !totals.cut && failure.empty();
  co_return totals;
}

}  // namespace airlock::proxy
