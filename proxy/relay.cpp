#include "proxy/relay.hpp"

#include "core/deadline.hpp"

#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/write.hpp>

#include <array>
#include <cerrno>
#include <memory>
#include <vector>

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

namespace airlock::proxy {
namespace {

namespace asio = boost::asio;
using asio::ip::tcp;
using core::nothrow;
using clock = std::chrono::steady_clock;

constexpr std::size_t chunk = 64 * 1024;  // one pipe's default capacity

// A pipe for splice, kept in a per-thread pool between uses: connections hold one only
// while bytes are in it, and it goes back empty.
struct pipe_pair {
  int read = -1;
  int write = -1;
  ~pipe_pair() {
    if (read >= 0) ::close(read);
    if (write >= 0) ::close(write);
  }
};

class pipe_pool {
 public:
  std::unique_ptr<pipe_pair> take() {
    if (!idle_.empty()) {
      auto p = std::move(idle_.back());
      idle_.pop_back();
      return p;
    }
    int fds[2];
    if (::pipe2(fds, O_NONBLOCK | O_CLOEXEC) != 0) return nullptr;  // out of fds: fall back to copying
    auto p = std::make_unique<pipe_pair>();
    p->read = fds[0];
    p->write = fds[1];
    return p;
  }
  void give_back(std::unique_ptr<pipe_pair> p) {
    if (idle_.size() < max_idle) idle_.push_back(std::move(p));
  }

 private:
  static constexpr std::size_t max_idle = 64;
  std::vector<std::unique_ptr<pipe_pair>> idle_;
};

pipe_pool& pipes() {
  thread_local pipe_pool pool;
  return pool;
}

void reset_both(tcp::socket& a, tcp::socket& b) {
  boost::system::error_code ignored;
  a.shutdown(tcp::socket::shutdown_both, ignored);
  b.shutdown(tcp::socket::shutdown_both, ignored);
}

struct direction {
  tcp::socket& from;
  tcp::socket& to;
  std::uint64_t& count;
  bool up;
};

enum class step { more, eof, failed, unsupported };

// Moves what is readable now through a pipe, waiting for `to` as needed; the pipe is
// empty again when this returns `more` or `eof`.
asio::awaitable<step> splice_once(direction d, pipe_pair& p, std::size_t& moved) {
  const auto in = ::splice(d.from.native_handle(), nullptr, p.write, nullptr, chunk, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
  if (in == 0) co_return step::eof;
  if (in < 0) {
    if (errno == EAGAIN || errno == EINTR) co_return step::more;
    co_return errno == EINVAL ? step::unsupported : step::failed;
  }
  auto pending = static_cast<std::size_t>(in);
  while (pending > 0) {
    const auto out = ::splice(p.read, nullptr, d.to.native_handle(), nullptr, pending, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
    if (out > 0) {
      pending -= static_cast<std::size_t>(out);
      continue;
    }
    if (out < 0 && errno == EINTR) continue;
    if (out < 0 && errno != EAGAIN) co_return step::failed;
    auto [ec] = co_await d.to.async_wait(tcp::socket::wait_write, nothrow);
    if (ec) co_return step::failed;
  }
  moved = static_cast<std::size_t>(in);
  co_return step::more;
}

// The same with a buffer, for sockets splice refuses.
asio::awaitable<step> copy_once(direction d, std::size_t& moved) {
  auto buf = std::make_unique<std::array<std::byte, 16384>>();
  boost::system::error_code ec;
  const auto n = d.from.read_some(asio::buffer(*buf), ec);
  if (ec == asio::error::would_block || ec == asio::error::try_again) co_return step::more;
  if (ec == asio::error::eof) co_return step::eof;
  if (ec) co_return step::failed;
  auto [wec, written] = co_await asio::async_write(d.to, asio::buffer(buf->data(), n), nothrow);
  if (wec) co_return step::failed;
  moved = written;
  co_return step::more;
}

// Copies one direction until EOF, an error, or the meter says stop.
asio::awaitable<void> pump(direction d, clock::time_point& deadline, clock::duration idle_limit, relay_meter* meter,
                           bool& cut) {
  bool use_splice = true;
  for (;;) {
    auto [ec] = co_await d.from.async_wait(tcp::socket::wait_read, nothrow);
    if (ec) {
      reset_both(d.from, d.to);
      co_return;
    }
    std::size_t moved = 0;
    step s = step::failed;
    if (use_splice) {
      if (auto p = pipes().take()) {
        s = co_await splice_once(d, *p, moved);
        if (s == step::unsupported) {
          use_splice = false;  // this socket pair cannot splice; nothing was moved yet
          pipes().give_back(std::move(p));
          s = step::more;
        } else if (s != step::failed) {
          pipes().give_back(std::move(p));  // empty: every byte that went in came out
        }
      } else {
        s = co_await copy_once(d, moved);
      }
    } else {
      s = co_await copy_once(d, moved);
    }
    if (s == step::eof) {
      boost::system::error_code ignored;
      d.to.shutdown(tcp::socket::shutdown_send, ignored);  // pass the half-close on
      co_return;
    }
    if (s == step::failed) {
      // A reset or a failure: the other direction has nothing left to say either.
      reset_both(d.from, d.to);
      co_return;
    }
    d.count += moved;
    deadline = clock::now() + idle_limit;
    if (moved && meter && !meter->moved(d.up, moved)) {
      cut = true;
      reset_both(d.from, d.to);
      co_return;
    }
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

asio::awaitable<relay_totals> relay(tcp::socket& client, tcp::socket& upstream, clock::duration idle_limit,
                                    relay_meter* meter) {
  using namespace asio::experimental::awaitable_operators;
  relay_totals totals;
  boost::system::error_code ec;
  // splice and the direct reads need sockets that never block the loop.
  client.native_non_blocking(true, ec);
  if (!ec) upstream.native_non_blocking(true, ec);
  if (ec) {
    reset_both(client, upstream);
    co_return totals;
  }
  auto deadline = clock::now() + idle_limit;
  auto outcome = co_await ((pump({client, upstream, totals.up, true}, deadline, idle_limit, meter, totals.cut) &&
                            pump({upstream, client, totals.down, false}, deadline, idle_limit, meter, totals.cut)) ||
                           watchdog(deadline));
  totals.idle_timeout = outcome.index() == 1;
  co_return totals;
}

}  // namespace airlock::proxy
