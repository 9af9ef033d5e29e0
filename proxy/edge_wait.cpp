#include "proxy/edge_wait.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <utility>

#include <sys/epoll.h>

#if AIRLOCK_EDGE_WAIT

#include <boost/asio/execution/context.hpp>
#include <boost/asio/query.hpp>

namespace airlock::proxy {

void edge_wait::start(boost::asio::ip::tcp::socket& s) { start_on(socket_internals::of(s), s.get_executor()); }

void edge_wait::start(boost::asio::ip::tcp::acceptor& a) { start_on(acceptor_internals::of(a), a.get_executor()); }

template <typename Impl>
void edge_wait::start_on(Impl& impl, const boost::asio::any_io_executor& loop) {
  if (!reactor_)
    reactor_ = &boost::asio::use_service<boost::asio::detail::reactor>(
        boost::asio::query(loop, boost::asio::execution::context));
  ec_ = boost::system::error_code();
  // Started as a speculative operation: the reactor asks look() at once, which answers
  // "not yet" while starting_ (the socket was just read empty), so the wait is queued
  // without touching epoll; or the reactor knows the socket is drained and queues it without
  // asking. From then on look() is asked only when an edge comes, and says "ready".
  starting_ = true;
  reactor_->start_op(boost::asio::detail::reactor::read_op, impl.socket_, impl.reactor_data_, this,
                     /*is_continuation=*/false, /*allow_speculative=*/true);
  starting_ = false;
}

auto edge_wait::look(reactor_op* base) noexcept -> status {
  return static_cast<edge_wait*>(base)->starting_ ? not_done : done;
}

void edge_wait::complete(void* owner, boost::asio::detail::operation* base, const boost::system::error_code&,
                         std::size_t) noexcept {
  auto* self = static_cast<edge_wait*>(base);
  // done() may free this wait with its owner: take what the call needs first.
  const auto call = self->done_;
  void* const who = self->owner_;
  const auto ec = self->ec_;
  call(who, /*ran=*/owner != nullptr, ec);
}

namespace {

// One wait for a coroutine: the awaiting coroutine's handler, kept with the wait until it
// completes. A loop torn down with it pending frees it unrun, and the handler with it: the
// coroutine unwinds.
template <typename Handler>
struct awaited_edge {
  Handler handler;
  edge_wait wait;
  explicit awaited_edge(Handler h) : handler(std::move(h)), wait(&awaited_edge::done, this) {}
  static void done(void* self, bool ran, const boost::system::error_code& ec) {
    auto* me = static_cast<awaited_edge*>(self);
    auto h = std::move(me->handler);
    delete me;
    if (ran) std::move(h)(ec);
  }
};

}  // namespace

boost::asio::awaitable<boost::system::error_code> next_connection(boost::asio::ip::tcp::acceptor& a) {
  constexpr auto as_result = boost::asio::as_tuple(boost::asio::use_awaitable);
  auto [ec] = co_await boost::asio::async_initiate<decltype(as_result), void(boost::system::error_code)>(
      [&a](auto handler) { (new awaited_edge<decltype(handler)>(std::move(handler)))->wait.start(a); }, as_result);
  co_return ec;
}

void found_empty(boost::asio::ip::tcp::socket& s) noexcept {
  if (s.is_open()) registration_internals::read_may_find_bytes(s) = false;
}

void report_peer_close(boost::asio::ip::tcp::socket& s) noexcept {
  if (s.is_open()) registration_internals::asked(s) |= EPOLLRDHUP;
}

namespace {

// Whether the loop's reports for `s` say if a FIN came (EPOLLRDHUP is asked for).
bool reports_fin(boost::asio::ip::tcp::socket& s) noexcept {
  return s.is_open() && (registration_internals::asked(s) & EPOLLRDHUP) != 0;
}

}  // namespace

unreported_input input_left_unreported(boost::asio::ip::tcp::socket& s) noexcept {
  // Only airlock's registrations report FINs from the start (Asio's are told at a re-arm).
  if (!reports_fin(s)) return unreported_input::unknown;
  // A FIN, a hang-up, a reset or an urgent byte in the last report: each may still be
  // there, and none raises another edge.
  const bool reported = (registration_internals::last_reported(s) & (EPOLLRDHUP | EPOLLHUP | EPOLLERR | EPOLLPRI)) != 0;
  return registration_internals::read_may_find_bytes(s) || reported ? unreported_input::maybe : unreported_input::no;
}

after_short_read what_a_short_read_left(boost::asio::ip::tcp::socket& s) noexcept {
  if (!reports_fin(s)) return after_short_read::look;
  const auto last = registration_internals::last_reported(s);
  if (last & EPOLLERR) return after_short_read::look;
  if (last & EPOLLPRI) return after_short_read::read_again;
  if (last & EPOLLRDHUP) return after_short_read::fin;
  if (last & EPOLLHUP) return after_short_read::look;  // no FIN named: the report cannot say
  return after_short_read::nothing;
}

}  // namespace airlock::proxy

#else

namespace airlock::proxy {

boost::asio::awaitable<boost::system::error_code> next_connection(boost::asio::ip::tcp::acceptor& a) {
  auto [ec] = co_await a.async_wait(boost::asio::ip::tcp::acceptor::wait_read,
                                    boost::asio::as_tuple(boost::asio::use_awaitable));
  co_return ec;
}

void found_empty(boost::asio::ip::tcp::socket&) noexcept {}
void report_peer_close(boost::asio::ip::tcp::socket&) noexcept {}
unreported_input input_left_unreported(boost::asio::ip::tcp::socket&) noexcept { return unreported_input::unknown; }
after_short_read what_a_short_read_left(boost::asio::ip::tcp::socket&) noexcept { return after_short_read::look; }

}  // namespace airlock::proxy

#endif
