#pragma once
// Every wait on a peer has a deadline, written where the wait is:
//   auto n = co_await with_deadline(sock.async_read_some(buf, nothrow), 5s);
// Boost 1.81 has no cancel_after, so this races the operation against a timer with
// awaitable_operators; the loser is cancelled.
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <chrono>
#include <optional>

namespace airlock::base {

namespace asio = boost::asio;

// The data path's completion token: errors come back as values, never as exceptions.
inline constexpr auto nothrow = asio::as_tuple(asio::use_awaitable);

// Runs `op` until it completes or `limit` passes; nullopt on timeout.
template <typename T>
asio::awaitable<std::optional<T>> with_deadline(asio::awaitable<T> op, std::chrono::steady_clock::duration limit) {
  using namespace asio::experimental::awaitable_operators;
  asio::steady_timer timer(co_await asio::this_coro::executor, limit);
  auto outcome = co_await (std::move(op) || timer.async_wait(nothrow));
  if (outcome.index() == 0) co_return std::move(std::get<0>(outcome));
  co_return std::nullopt;
}

// The same for an operation without a result; false on timeout.
inline asio::awaitable<bool> with_deadline(asio::awaitable<void> op, std::chrono::steady_clock::duration limit) {
  using namespace asio::experimental::awaitable_operators;
  asio::steady_timer timer(co_await asio::this_coro::executor, limit);
  auto outcome = co_await (std::move(op) || timer.async_wait(nothrow));
  co_return outcome.index() == 0;
}

}  // namespace airlock::base
