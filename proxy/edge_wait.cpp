#include "proxy/edge_wait.hpp"

#include <sys/epoll.h>

#if AIRLOCK_EDGE_WAIT

#include <boost/asio/execution/context.hpp>
#include <boost/asio/query.hpp>

namespace airlock::proxy {

void edge_wait::start(boost::asio::ip::tcp::socket& s) {
  auto& impl = socket_internals::of(s);
  if (!reactor_)
    reactor_ = &boost::asio::use_service<boost::asio::detail::reactor>(
        boost::asio::query(s.get_executor(), boost::asio::execution::context));
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

void report_peer_close(boost::asio::ip::tcp::socket& s) noexcept {
  if (s.is_open()) registration_internals::asked(s) |= EPOLLRDHUP;
}

bool peer_close_maybe_queued(boost::asio::ip::tcp::socket& s) noexcept {
  return !s.is_open() || (registration_internals::asked(s) & EPOLLRDHUP) == 0 ||
         (registration_internals::last_reported(s) & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) != 0;
}

}  // namespace airlock::proxy

#else

namespace airlock::proxy {

void report_peer_close(boost::asio::ip::tcp::socket&) noexcept {}
bool peer_close_maybe_queued(boost::asio::ip::tcp::socket&) noexcept { return true; }

}  // namespace airlock::proxy

#endif
