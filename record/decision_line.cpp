#include "record/decision_line.hpp"

#include "record/line_with_process.hpp"
#include "record/packed.hpp"

#include <algorithm>
#include <cstdio>
#include <memory>
#include <utility>

namespace airlock::record {

namespace {

std::uint64_t milliseconds_since(decision_line::clock::time_point t) noexcept {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::milliseconds>(decision_line::clock::now() - t).count());
}

// What the decision line said and the close line does not repeat: its first `decided_notes`
// notes and the process.
void forget_decided(decision_record& rec, std::size_t decided_notes) {
  const auto n = static_cast<std::ptrdiff_t>(std::min(decided_notes, rec.notes.size()));
  rec.notes.erase(rec.notes.begin(), rec.notes.begin() + n);
  rec.process_json.clear();
}

void make_close_line(decision_record& rec, decision_line::clock::time_point started) {
  rec.event = event_kind::close;
  rec.ts = std::chrono::system_clock::now();
  rec.duration_ms = milliseconds_since(started);
}

}  // namespace

void mark_cut(decision_record& rec, std::string_view budget) {
  rec.verdict = policy::verdict::deny;
  rec.reason = policy::reason::limit_exceeded;
  rec.rule = "default";
  rec.notes.push_back("limit:" + std::string(budget));
  rec.notes.push_back("cut_open_connection");
}

void mark_grant_ended(decision_record& rec) {
  rec.verdict = policy::verdict::deny;
  rec.reason = policy::reason::grant_ended;
  rec.notes.push_back("cut_open_connection");
}

decision_line::decision_line(decision_sink& sink, decision_record& rec, timing t) noexcept
    : sink_(&sink), rec_(&rec), timing_(t), owed_(true) {}

decision_line::decision_line(decision_sink& sink) noexcept : sink_(&sink) {}

// Every relayed connection's frame holds one for its whole life (libstdc++, 64-bit).
static_assert(sizeof(decision_line) <= 80, "decision_line grew: every relayed connection pays for it");

decision_line::decision_line(decision_line&& other) noexcept
    : probe(std::move(other.probe)),
      started(other.started),
      sink_(other.sink_),
      rec_(other.rec_),
      packed_(std::move(other.packed_)),
      decided_notes_(other.decided_notes_),
      timing_(other.timing_),
      owed_(std::exchange(other.owed_, false)) {}

decision_line::~decision_line() { leave(); }

void decision_line::write(decision_sink& sink, const decision_record& rec) noexcept { sink.emit(rec); }

void decision_line::decide() {
  if (decided() || rec_ == nullptr) return;
  rec_->ts = std::chrono::system_clock::now();
  rec_->duration_ms = milliseconds_since(started);
  emit_with_process(*sink_, *rec_, probe);
  decided_notes_ = static_cast<std::uint32_t>(rec_->notes.size());
}

void decision_line::take(decision_line& other) {
  other.decide();
  auto& rec = *other.rec_;
  // The close line needs neither the decision's notes nor its process: not kept.
  forget_decided(rec, other.decided_notes_);
  packed_ = pack(rec);
#ifndef NDEBUG
  if (render_json_line(unpack(packed_)) != render_json_line(rec)) {
    std::fprintf(stderr, "airlock: a decision record field is not packed (record/fields.hpp each_field)\n");
    std::abort();
  }
#endif
  started = other.started;
  decided_notes_ = 0;
  owed_ = true;
  other.owed_ = false;
}

void decision_line::leave(close_facts* facts) noexcept {
  if (!owed_) return;
  owed_ = false;
  if (!decided()) {  // the line about the decision, whatever it was
    if (timing_ == timing::at_exit) {
      rec_->ts = std::chrono::system_clock::now();
      rec_->duration_ms = milliseconds_since(started);
    }
    emit_with_process(*sink_, *rec_, probe);
    return;
  }
  try {  // the close line: a copy, or the packed record, with what came after
    decision_record packed_rec;
    decision_record& rec = rec_ != nullptr ? *rec_ : (packed_rec = unpack(packed_));
    if (rec_ != nullptr) forget_decided(rec, decided_notes_);
    make_close_line(rec, started);
    if (facts != nullptr) {
      rec.bytes_up = facts->bytes_up;
      rec.bytes_down = facts->bytes_down;
      for (auto& n : facts->notes) rec.notes.push_back(std::move(n));
      if (facts->grant_ended) mark_grant_ended(rec);
      else if (facts->cut) mark_cut(rec, facts->budget);
    }
    sink_->emit(rec);
  } catch (...) {
    std::fprintf(stderr, "airlock: a close line was lost (out of memory)\n");
  }
}

}  // namespace airlock::record
