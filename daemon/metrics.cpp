#include "daemon/metrics.hpp"

#include <prometheus/text_serializer.h>

namespace airlock::daemon {
namespace {

namespace prom = prometheus;

prom::Family<prom::Counter>& counter_family(prom::Registry& r, const char* name, const char* help) {
  return prom::BuildCounter().Name(name).Help(help).Register(r);
}

prom::Gauge& gauge(prom::Registry& r, const char* name, const char* help) {
  return prom::BuildGauge().Name(name).Help(help).Register(r).Add({});
}

// 0.5 ms to 4 s: a cached upstream answers in well under a millisecond, a cold recursive
// lookup in tens, and c-ares gives up after 3 s.
const prom::Histogram::BucketBoundaries upstream_buckets{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                                         0.1,    0.25,  0.5,    1,     2,    4};

}  // namespace

metrics::metrics()
    : registry_(std::make_shared<prom::Registry>()),
      decisions_(counter_family(*registry_, "airlock_decisions_total",
                                "Decisions by event (dns, connect, http), verdict, reason, proto and policy")),
      bytes_(counter_family(*registry_, "airlock_relayed_bytes_total",
                            "Bytes relayed through allowed connections, counted when they close")),
      bytes_up_(bytes_.Add({{"direction", "up"}})),
      bytes_down_(bytes_.Add({{"direction", "down"}})),
      upstream_family_(prom::BuildHistogram()
                           .Name("airlock_dns_upstream_seconds")
                           .Help("Time from sending a question upstream to its answer or failure")
                           .Register(*registry_)),
      upstream_answered_(upstream_family_.Add({{"outcome", "answered"}}, upstream_buckets)),
      upstream_failed_(upstream_family_.Add({{"outcome", "failed"}}, upstream_buckets)),
      reloads_(counter_family(*registry_, "airlock_reloads_total", "Policy reloads by result")),
      reloads_ok_(reloads_.Add({{"result", "ok"}})),
      reloads_failed_(reloads_.Add({{"result", "failed"}})),
      active_connections_(gauge(*registry_, "airlock_active_connections", "Proxied connections open now")),
      sessions_(gauge(*registry_, "airlock_sessions", "Sessions known now (configured and registered)")),
      log_queue_depth_(gauge(*registry_, "airlock_log_queue_depth", "Decision lines waiting for the log writer")),
      overload_level_(gauge(*registry_, "airlock_overload_level",
                            "Memory pressure level: 0 normal, 1 shrinking (shorter timeouts), 2 refusing new work")),
      memory_pressure_(gauge(*registry_, "airlock_memory_pressure",
                             "Resident memory over overload.memory_limit (or the pressure file's number)")),
      log_dropped_(counter_family(*registry_, "airlock_log_dropped_total",
                                  "Decision lines that could not be queued or written (each reported by a "
                                  "log_dropped line)")
                       .Add({})),
      leaves_(counter_family(*registry_, "airlock_tls_leaves_total",
                             "TLS inspection's leaf certificates: served from the cache (hit), minted, evicted")),
      log_dropped_seen_{log_dropped_},
      leaf_hits_{leaves_.Add({{"result", "hit"}})},
      leaf_minted_{leaves_.Add({{"result", "minted"}})},
      leaf_evicted_{leaves_.Add({{"result", "evicted"}})},
      accept_pauses_{counter_family(*registry_, "airlock_accept_pauses_total",
                                    "Times a proxy listener stopped accepting at a daemon-wide cap (limits.connections "
                                    "or limits.pending_handshakes): new connections waited in the kernel's queue")
                         .Add({})},
      accept_paused_us_{counter_family(*registry_, "airlock_accept_paused_seconds_total",
                                       "Time proxy listeners spent not accepting at a daemon-wide cap, summed over "
                                       "listeners")
                            .Add({}),
                        1e-6} {}

void metrics::follower::follow(std::uint64_t total) {
  if (total > seen) {
    counter.Increment(static_cast<double>(total - seen) * unit);
    seen = total;
  }
}

std::string_view metrics::policy_label(std::string_view policy) noexcept {
  return policy.starts_with(runtime_policy_prefix) ? std::string_view("session") : policy;
}

void metrics::count(const record::decision_record& r) {
  if (r.event == record::event_kind::session || r.event == record::event_kind::grant) return;
  // A connection's end is counted in bytes; only a cut (a deny made mid-connection) is a
  // decision too. Requests' lines (http) carry parts of their connection's bytes.
  if (r.event != record::event_kind::close || r.verdict != policy::verdict::allow) count_decision(r);
  if (r.event != record::event_kind::close) return;
  if (r.bytes_up) bytes_up_.Increment(static_cast<double>(*r.bytes_up));
  if (r.bytes_down) bytes_down_.Increment(static_cast<double>(*r.bytes_down));
}

void metrics::count_decision(const record::decision_record& r) {
  // Built in a buffer kept between calls: a decision costs no allocation.
  thread_local std::string key;
  key.clear();
  for (std::string_view part : {to_string(r.event), policy::to_string(r.verdict), policy::to_string(r.reason),
                                std::string_view(r.proto), policy_label(r.policy)}) {
    key += part;
    key += '\0';
  }
  auto& bucket = decision_counters_[std::hash<std::string_view>{}(key) % counter_buckets];
  prom::Counter* counter = nullptr;
  for (auto* n = bucket.load(std::memory_order_acquire); n != nullptr && counter == nullptr; n = n->next)
    if (n->key == key) counter = n->counter;
  if (counter == nullptr) counter = &add_decision_counter(bucket, key, r);
  counter->Increment();
}

prom::Counter& metrics::add_decision_counter(std::atomic<const counter_node*>& bucket, std::string_view key,
                                             const record::decision_record& r) {
  std::lock_guard lock(adding_);
  const counter_node* head = bucket.load(std::memory_order_relaxed);
  for (auto* n = head; n != nullptr; n = n->next)
    if (n->key == key) return *n->counter;  // another loop added it meanwhile
  auto& c = decisions_.Add({{"event", std::string(to_string(r.event))},
                            {"verdict", std::string(policy::to_string(r.verdict))},
                            {"reason", std::string(policy::to_string(r.reason))},
                            {"proto", r.proto},
                            {"policy", std::string(policy_label(r.policy))}});
  nodes_.push_back(std::make_unique<const counter_node>(counter_node{std::string(key), &c, head}));
  bucket.store(nodes_.back().get(), std::memory_order_release);
  return c;
}

void metrics::observe_upstream(std::chrono::steady_clock::duration took, bool answered) {
  const double seconds = std::chrono::duration<double>(took).count();
  (answered ? upstream_answered_ : upstream_failed_).Observe(seconds);
}

void metrics::count_reload(bool ok) { (ok ? reloads_ok_ : reloads_failed_).Increment(); }

std::string metrics::render(const metrics_sample& now) {
  active_connections_.Set(static_cast<double>(now.active_connections));
  sessions_.Set(static_cast<double>(now.sessions));
  log_queue_depth_.Set(static_cast<double>(now.log_queue_depth));
  overload_level_.Set(now.overload_level);
  memory_pressure_.Set(now.memory_pressure);
  log_dropped_seen_.follow(now.log_dropped_total);
  leaf_hits_.follow(now.leaf_hits);
  leaf_minted_.follow(now.leaf_minted);
  leaf_evicted_.follow(now.leaf_evicted);
  accept_pauses_.follow(now.accept_pauses);
  accept_paused_us_.follow(now.accept_paused_us);
  return prom::TextSerializer().Serialize(registry_->Collect());
}

}  // namespace airlock::daemon
