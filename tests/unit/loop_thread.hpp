#pragma once
// An event loop on a thread of its own, as the daemon runs them, for tests of what the
// loops share (base/read_map.hpp and its users).
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

#include <chrono>
#include <functional>
#include <future>
#include <thread>

namespace airlock::test {

struct loop_thread {
  boost::asio::io_context io{1};
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work{io.get_executor()};
  std::thread thread{[this] { io.run(); }};

  // Stops the loop and joins its thread; its io_context stays, so what has objects on it
  // (a loop_grace's timer) may go after this and before the loop_thread. Call it before
  // anything the loop's handlers use goes out of scope.
  void stop() {
    work.reset();
    io.stop();
    if (thread.joinable()) thread.join();
  }
  ~loop_thread() { stop(); }

  // Runs f on this loop and waits for it.
  template <typename F>
  void run_here(F f) {
    std::promise<void> done;
    boost::asio::post(io, [&] {
      f();
      done.set_value();
    });
    done.get_future().wait();
  }
};

// Whether `ok` comes true within about two seconds.
inline bool eventually(const std::function<bool()>& ok) {
  for (int i = 0; i < 400; ++i) {
    if (ok()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return ok();
}

}  // namespace airlock::test
