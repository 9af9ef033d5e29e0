#pragma once
// A bounded queue of text lines between threads that never makes its writer wait: what a
// reader slower than the writers cannot hold is dropped, counted, and told at its next
// take. Its owner is woken (from whichever thread offered) once per batch, not per line.
// The decision feed's subscriptions and the approvers' streams are such queues.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>

namespace airlock::record {

class line_queue {
 public:
  line_queue(std::size_t capacity, std::function<void()> wake) : capacity_(capacity), wake_(std::move(wake)) {}

  // Every line queued since the last take, each with its newline, oldest first; `dropped`
  // gets how many did not fit meanwhile. When there is nothing, `wake` is armed in the same
  // step: the next line calls it, so a reader that waits after an empty take misses none.
  std::string take(std::uint64_t& dropped);

  // Queues one line (with its newline); returns the wake-up to call (outside any lock) or null.
  const std::function<void()>* offer(std::string_view line);

 private:
  const std::size_t capacity_;
  const std::function<void()> wake_;
  std::mutex mutex_;
  std::string queued_;
  std::size_t lines_ = 0;
  std::uint64_t dropped_ = 0;
  bool armed_ = true;
};

}  // namespace airlock::record
