#pragma once
// The one way a server starts a per-connection or per-query coroutine. co_spawn with
// `detached` would swallow an escaping exception; this reports it instead, so a bug
// in one connection is loud, counted and contained.
#include <boost/asio/co_spawn.hpp>

#include <exception>
#include <utility>

namespace airlock::base {

// A co_spawn completion handler that hands any escaping exception's text to on_error.
template <typename OnError>
auto report_exceptions(OnError on_error) {
  return [on_error = std::move(on_error)](std::exception_ptr e) mutable {
    if (!e) return;
    try {
      std::rethrow_exception(e);
    } catch (const std::exception& error) {
      on_error(error.what());
    } catch (...) {
      on_error("unknown exception");
    }
  };
}

template <typename Executor, typename Awaitable, typename OnError>
void spawn_session(const Executor& executor, Awaitable&& work, OnError&& on_error) {
  boost::asio::co_spawn(executor, std::forward<Awaitable>(work), report_exceptions(std::forward<OnError>(on_error)));
}

}  // namespace airlock::base
