#include "record/line_queue.hpp"

#include <utility>

namespace airlock::record {

std::string line_queue::take(std::uint64_t& dropped) {
  std::lock_guard lock(mutex_);
  dropped = std::exchange(dropped_, 0);
  lines_ = 0;
  std::string out;
  out.swap(queued_);
  armed_ = out.empty() && dropped == 0;
  return out;
}

const std::function<void()>* line_queue::offer(std::string_view line) {
  std::lock_guard lock(mutex_);
  if (lines_ >= capacity_) {
    ++dropped_;
  } else {
    queued_.append(line);
    ++lines_;
  }
  if (!armed_) return nullptr;
  armed_ = false;
  return &wake_;
}

}  // namespace airlock::record
