#pragma once
// Decisions as they happen, for whoever watches (`airlock tail`, a harness reacting to a
// denial while its tool call still runs). A sink in front of the log: every record goes on
// to the log unchanged, and a copy of its line to each subscription whose filter it
// passes. Nobody watching costs the data path one atomic load; a watcher costs a line's
// rendering and a short lock per decision.
//
// A subscription is a bounded queue that never makes the data path wait
// (record/line_queue.hpp): a reader slower than the decisions loses lines, counted.
#include "record/decision.hpp"
#include "record/line_queue.hpp"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace airlock::record {

struct feed_filter {
  std::string session;        // empty: every session's lines (session events included)
  bool denials_only = false;  // deny and audit-deny lines, cuts included
  bool passes(const decision_record& r) const noexcept;
};

class decision_feed;

// A watcher's queue of lines (record/line_queue.hpp) and the filter they pass.
class feed_subscription : public line_queue {
 public:
  static constexpr std::size_t default_capacity = 4096;  // lines

  const feed_filter& filter() const noexcept { return filter_; }

 private:
  friend class decision_feed;
  feed_subscription(feed_filter f, std::size_t capacity, std::function<void()> wake)
      : line_queue(capacity, std::move(wake)), filter_(std::move(f)) {}

  const feed_filter filter_;
};

class decision_feed final : public decision_sink {
 public:
  explicit decision_feed(decision_sink& next) : next_(next) {}

  // A subscription lives as long as its owner holds it; `wake` may be called from any
  // thread, and must only hand the news to the owner's own thread.
  std::shared_ptr<feed_subscription> subscribe(feed_filter f, std::function<void()> wake,
                                               std::size_t capacity = feed_subscription::default_capacity);
  // Subscriptions still held (those let go of are forgotten here, as at the next line).
  std::size_t watchers();

  void emit(const decision_record& r) noexcept override;
  bool recording() const noexcept override { return next_.recording(); }

 private:
  void publish(const decision_record& r) noexcept;
  void forget_gone();  // under mutex_

  decision_sink& next_;
  std::atomic<std::size_t> watching_{0};  // subscriptions not yet found gone
  std::mutex mutex_;
  std::vector<std::weak_ptr<feed_subscription>> subscriptions_;
};

}  // namespace airlock::record
