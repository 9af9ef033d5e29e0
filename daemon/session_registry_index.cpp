#include "base/read_sections.hpp"
#include "daemon/metrics.hpp"
#include "daemon/session_registry.hpp"
#include "policy/snapshot.hpp"

#include <atomic>
#include <chrono>

namespace airlock::daemon {

void session_tally::add(const record::decision_record& r) noexcept {
  constexpr auto relaxed = std::memory_order_relaxed;  // totals only: nothing else is ordered by them
  if (r.event == record::event_kind::dns) dns_queries.fetch_add(1, relaxed);
  // A connection counts once, by its decision; its bytes come with its close line.
  if (r.event == record::event_kind::connect)
    (r.verdict == policy::verdict::allow ? connections_allowed : connections_denied).fetch_add(1, relaxed);
  if (r.event != record::event_kind::connect && r.event != record::event_kind::close) return;
  if (r.bytes_up.value_or(0) != 0) bytes_up.fetch_add(*r.bytes_up, relaxed);
  if (r.bytes_down.value_or(0) != 0) bytes_down.fetch_add(*r.bytes_down, relaxed);
}

control::session_totals session_tally::read() const noexcept {
  constexpr auto relaxed = std::memory_order_relaxed;
  return {dns_queries.load(relaxed), connections_allowed.load(relaxed), connections_denied.load(relaxed),
          bytes_up.load(relaxed), bytes_down.load(relaxed)};
}

std::string session_registry::netns_of(std::string_view id) const {
  const base::read_sections::guard reading;
  const stamp_index* index = index_.load(std::memory_order_seq_cst);
  auto it = index->find(id);
  return it == index->end() ? std::string() : it->second.netns;
}

control::session_totals session_registry::close_removed(const entry& e) {
  // publish_index() took the session out and waited for every line that could still hold
  // the old index, so every line stamped as the session's is in these counters (each
  // reader's section ends with a release, which that wait acquired).
  emit_session(e, "close");
  return e.tally->read();
}

void session_registry::publish_index() {
  auto next = std::make_unique<stamp_index>();
  for (const auto& [id, e] : sessions_)
    next->emplace(id, stamp{e.tally, e.view.labels, e.view.tool_call, e.view.netns});
  const stamp_index* old = index_.exchange(next.release(), std::memory_order_seq_cst);
  // A line being emitted on another thread this very moment may still read the old index
  // (and, through it, a removed session's counters): wait for it, then free the old one.
  base::read_sections::wait_for_readers();
  delete old;
}

void session_registry::emit_session(const entry& e, std::string_view action, std::string note) {
  record::decision_record r;
  r.event = record::event_kind::session;
  r.session = e.view.id;
  r.labels = e.view.labels;
  r.tool_call = e.view.tool_call;
  r.action = std::string(action);
  r.policy = e.view.policy;
  if (const auto* p = policies_.current()->find_policy(e.view.policy))
    r.mode = p->mode() == policy::policy_mode::audit ? "audit" : "enforce";
  r.sources = e.view.sources;
  if (!note.empty()) r.notes.push_back(std::move(note));
  if (action == "close") {
    const auto t = e.tally->read();
    r.dns_queries = t.dns_queries;
    r.connections_allowed = t.connections_allowed;
    r.connections_denied = t.connections_denied;
    r.bytes_up = t.bytes_up;
    r.bytes_down = t.bytes_down;
    r.duration_ms = static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - e.opened).count());
  }
  record::decision_line::write(log_, r);
}

void session_registry::stamp_record(record::decision_record& r) const {
  const base::read_sections::guard reading;
  const stamp_index* index = index_.load(std::memory_order_seq_cst);
  if (const auto it = index->find(r.session); it != index->end()) {
    r.labels = it->second.labels;
    r.tool_call = it->second.tool_call;
  }
}

void session_registry::emit(const record::decision_record& r) noexcept {
  try {
    metrics_.count(r);
  } catch (...) {  // a metric that cannot be counted must not cost the line
  }
  const base::read_sections::guard reading;  // until the last use of the stamp
  const stamp_index* index = index_.load(std::memory_order_seq_cst);
  const auto it = index->find(r.session);
  if (it == index->end()) return log_.emit(r);
  const stamp& s = it->second;
  s.tally->add(r);
  if (s.labels.empty() && s.tool_call.empty()) return log_.emit(r);
  try {
    record::decision_record stamped = r;
    stamped.labels = s.labels;
    stamped.tool_call = s.tool_call;
    log_.emit(stamped);
  } catch (...) {  // out of memory copying: the line without labels beats no line
    log_.emit(r);
  }
}

}  // namespace airlock::daemon
