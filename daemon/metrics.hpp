#pragma once
// The numbers behind `/metrics` (Prometheus text format, via prometheus-cpp's core
// library; the HTTP side is our own admin listener on the daemon's event loop, so no
// extra server threads). Fed from the decision stream and a few hooks; gauges are read
// when scraped. count() is called from every event loop at once and takes no lock for a
// label set it has seen; the rest is used on the main loop.
#include "record/decision.hpp"

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace airlock::daemon {

// What is only known at scrape time.
struct metrics_sample {
  std::size_t active_connections = 0;
  std::size_t sessions = 0;
  std::size_t log_queue_depth = 0;
  std::uint64_t log_dropped_total = 0;
  // TLS inspection's leaf cache, since start (all 0 without inspection).
  std::uint64_t leaf_hits = 0;
  std::uint64_t leaf_minted = 0;
  std::uint64_t leaf_evicted = 0;
  // Memory pressure (base/overload.hpp): 0 normal, 1 shrinking, 2 refusing; used / limit.
  int overload_level = 0;
  double memory_pressure = 0;
  // Listeners that stopped accepting at a daemon-wide cap: how often, for how long in all.
  std::uint64_t accept_pauses = 0;
  std::uint64_t accept_paused_us = 0;
  std::size_t decision_watchers = 0;  // live streams of GET /v1/decisions (`airlock tail`)
  std::size_t approvers = 0;          // live streams of GET /v1/approvals (`airlock approve`)
  std::size_t approval_holds = 0;     // queries and connections held for an answer now
};

class metrics {
 public:
  metrics();

  void count(const record::decision_record& r);
  // The `policy` label of a decision's series: a session's own policy (an `--allow` on top
  // of its base, named "session:ID") counts as "session", so sessions that come and go
  // add no series; the log line keeps the full name.
  static std::string_view policy_label(std::string_view policy) noexcept;
  static constexpr std::string_view runtime_policy_prefix = "session:";
  void observe_upstream(std::chrono::steady_clock::duration took, bool answered);
  void count_reload(bool ok);

  // The Prometheus text exposition, version 0.0.4.
  std::string render(const metrics_sample& now);

 private:
  std::shared_ptr<prometheus::Registry> registry_;
  prometheus::Family<prometheus::Counter>& decisions_;
  prometheus::Family<prometheus::Counter>& bytes_;
  prometheus::Counter& bytes_up_;
  prometheus::Counter& bytes_down_;
  prometheus::Family<prometheus::Histogram>& upstream_family_;
  prometheus::Histogram& upstream_answered_;
  prometheus::Histogram& upstream_failed_;
  prometheus::Family<prometheus::Counter>& reloads_;
  prometheus::Counter& reloads_ok_;
  prometheus::Counter& reloads_failed_;
  prometheus::Gauge& active_connections_;
  prometheus::Gauge& sessions_;
  prometheus::Gauge& log_queue_depth_;
  prometheus::Gauge& overload_level_;
  prometheus::Gauge& memory_pressure_;
  prometheus::Counter& log_dropped_;
  prometheus::Family<prometheus::Counter>& leaves_;
  // Counters that mirror a total kept elsewhere: each render adds what grew since the last.
  struct follower {
    prometheus::Counter& counter;
    double unit = 1;  // what one of the total's units is in the counter's (1e-6: us -> s)
    std::uint64_t seen = 0;
    void follow(std::uint64_t total);
  };
  follower log_dropped_seen_;
  follower leaf_hits_, leaf_minted_, leaf_evicted_;
  follower accept_pauses_;
  follower accept_paused_us_;
  // Label sets seen so far, as lists that only grow: a decision costs a hash, a walk of a
  // short list and an atomic increment. A set not seen before is added under `adding_`
  // (and prometheus-cpp's own family lock); there are at most a few hundred.
  struct counter_node {
    std::string key;
    prometheus::Counter* counter;
    const counter_node* next;
  };
  static constexpr std::size_t counter_buckets = 256;
  void count_decision(const record::decision_record& r);
  prometheus::Counter& add_decision_counter(std::atomic<const counter_node*>& bucket, std::string_view key,
                                            const record::decision_record& r);
  std::array<std::atomic<const counter_node*>, counter_buckets> decision_counters_{};
  std::mutex adding_;
  std::vector<std::unique_ptr<const counter_node>> nodes_;  // what the lists point at
};

}  // namespace airlock::daemon
