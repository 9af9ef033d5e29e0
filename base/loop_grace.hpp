#pragma once
// Grace periods over the event loops: the reclaimer for what the loops read without a lock
// (quiescent-state-based reclamation, as RCU does with CPUs). A loop runs one handler at a
// time on its own thread, and a reader never keeps a pointer across a co_await, so a
// handler posted to every loop after a node was unlinked runs after every read that could
// still see it. Garbage is gathered for a while (at most one grace period per `batch`),
// then one handler goes to each loop; the loop that runs the last of them frees the lot.
//
// The writer is one loop (the first); retire() runs there, or on the setup thread before
// start(), when no loop runs yet and garbage goes at once. A loop's handlers that never
// run (it stopped) free their share when the loop is destroyed.
#include "base/reclaim.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <vector>

namespace airlock::base {

class loop_grace final : public reclaimer {
 public:
  static constexpr std::chrono::milliseconds batch{10};

  loop_grace() = default;
  ~loop_grace();
  loop_grace(const loop_grace&) = delete;
  loop_grace& operator=(const loop_grace&) = delete;

  // From now on garbage waits for `readers` (every loop that reads, the writer's own among
  // them); `writer` runs retire() and the batch timer. Call once, before the loops run.
  void start(boost::asio::any_io_executor writer, std::vector<boost::asio::any_io_executor> readers);

  using reclaimer::retire;
  void retire(garbage g) override;

  // Grace periods begun, and how many retired objects wait (for tests).
  std::size_t periods() const noexcept { return periods_; }
  std::size_t waiting() const noexcept { return pending_.size(); }

 private:
  struct period;
  void arm();
  void begin();
  void ended();

  std::vector<boost::asio::any_io_executor> readers_;
  std::optional<boost::asio::steady_timer> timer_;  // on the writer's loop
  std::vector<garbage> pending_;
  bool timer_armed_ = false;
  bool in_flight_ = false;
  std::size_t periods_ = 0;
};

}  // namespace airlock::base
