#pragma once
// Starts a test's coroutine on `io`; an exception it throws escapes io.run() and fails the
// test case. A coroutine lambda must not capture (the lambda object is gone once it has
// returned its awaitable): tests pass what it needs as parameters, which outlive the loop.
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>

#include <exception>
#include <utility>

namespace airlock::test {

template <typename Awaitable>
void spawn(boost::asio::io_context& io, Awaitable a) {
  boost::asio::co_spawn(io, std::move(a), [](std::exception_ptr e) {
    if (e) std::rethrow_exception(e);
  });
}

}  // namespace airlock::test
