#include "record/decision_feed.hpp"

#include <algorithm>

namespace airlock::record {

bool feed_filter::passes(const decision_record& r) const noexcept {
  if (!session.empty() && r.session != session) return false;
  // A session's open and close are not decisions (their verdict is no field of the line).
  if (denials_only &&
      (r.event == event_kind::session || r.event == event_kind::grant || r.verdict == policy::verdict::allow))
    return false;
  return true;
}

std::shared_ptr<feed_subscription> decision_feed::subscribe(feed_filter f, std::function<void()> wake,
                                                            std::size_t capacity) {
  std::shared_ptr<feed_subscription> s(new feed_subscription(std::move(f), capacity, std::move(wake)));
  std::lock_guard lock(mutex_);
  subscriptions_.push_back(s);
  watching_.store(subscriptions_.size(), std::memory_order_relaxed);
  return s;
}

void decision_feed::forget_gone() {
  std::erase_if(subscriptions_, [](const auto& w) { return w.expired(); });
  watching_.store(subscriptions_.size(), std::memory_order_relaxed);
}

std::size_t decision_feed::watchers() {
  std::lock_guard lock(mutex_);
  forget_gone();
  return subscriptions_.size();
}

void decision_feed::emit(const decision_record& r) noexcept {
  next_.emit(r);
  if (watching_.load(std::memory_order_relaxed) != 0) publish(r);
}

void decision_feed::publish(const decision_record& r) noexcept {
  try {
    std::vector<std::shared_ptr<feed_subscription>> passing;
    {
      std::lock_guard lock(mutex_);
      forget_gone();
      for (const auto& w : subscriptions_)
        if (auto s = w.lock(); s && s->filter().passes(r)) passing.push_back(std::move(s));
    }
    if (passing.empty()) return;
    const std::string line = render_json_line(r);
    for (const auto& s : passing)
      if (const auto* wake = s->offer(line)) (*wake)();
  } catch (...) {
    // Out of memory copying a line for a watcher: the log has it; the watcher misses it.
  }
}

}  // namespace airlock::record
