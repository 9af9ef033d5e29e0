#pragma once
// The one way a decision line leaves airlock. A decision_line owes its record's line from
// the moment it exists and writes it on every way out of its owner's scope: a return, an
// error, a cancellation at shutdown. Every path uses it: a connection (its decision line,
// then its close line), a DNS query, an HTTP request's own line, a session's open and close.
//
//   decision_record rec;
//   decision_line line(sink, rec);    // a denial, whatever happens next, is written
//   ...
//   line.decide();                    // allowed: the decision line now, the close line later
//
// When a process lookup was started (`probe`), the decision line waits for it, briefly and
// off the data path; a close line never does (the decision line named the process).
#include "attribution/probe.hpp"
#include "record/decision.hpp"

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace airlock::record {

// What came after an allowed connection's decision, for its close line.
struct close_facts {
  std::uint64_t bytes_up = 0;
  std::uint64_t bytes_down = 0;
  std::vector<std::string> notes{};  // idle_timeout, client_reset, requests:N...
  bool cut = false;                  // a budget cut the connection: the line becomes a deny
  std::string_view budget{};         // which one (limit:NAME)
  bool grant_ended = false;          // the cut was the end of the grant that let it through
};

// A close line that a budget cut: a deny, limit_exceeded, naming the budget.
void mark_cut(decision_record& rec, std::string_view budget);
// A close line of a connection cut because the grant that let it through ended: a deny,
// grant_ended, its rule still the grant's.
void mark_grant_ended(decision_record& rec);

class decision_line {
 public:
  using clock = std::chrono::steady_clock;
  // How the line is timed: a connection's line gets its ts and duration_ms (how long
  // deciding took) as it leaves; a query's and a request's as their record says.
  enum class timing : bool { as_recorded, at_exit };

  // Owes `rec`'s line; `rec` must outlive this (it is not copied until the line leaves).
  decision_line(decision_sink& sink, decision_record& rec, timing t = timing::as_recorded) noexcept;
  // Owes nothing until take() hands it a connection's close line.
  explicit decision_line(decision_sink& sink) noexcept;
  decision_line(decision_line&& other) noexcept;
  decision_line(const decision_line&) = delete;
  decision_line& operator=(const decision_line&) = delete;
  decision_line& operator=(decision_line&&) = delete;
  ~decision_line();

  // A complete record's line, now: what a decision_line does for a line nothing can
  // interrupt between its record and its writing.
  static void write(decision_sink& sink, const decision_record& rec) noexcept;

  // The record the line is about (not for a line made by take()).
  decision_record& record() const noexcept { return *rec_; }

  // An allowed connection's decision: its line now (stamped with the session's labels and
  // tool call of this moment); what is owed from here is its close line.
  void decide();
  bool decided() const noexcept { return decided_notes_ != not_decided; }

  // Takes over `other`'s close line, deciding it first if it was not, in packed form
  // (record/packed.hpp): `other` owes nothing after. GCC keeps every local of a coroutine
  // in its frame for the coroutine's whole life, so a connection is judged in one
  // coroutine, with its record and sniffed bytes, and relayed by its caller, which keeps
  // only this line's ~200 packed bytes.
  void take(decision_line& other);
  // The close line, now, with what the relay saw (a line whose relay never finished
  // leaves without them). Owes nothing after. Applied as the line leaves rather than kept:
  // the line sits in every relayed connection's frame, and the facts would be kept there
  // for the whole relay only to be read at its end.
  void close(close_facts facts) noexcept { leave(&facts); }

  // Owes nothing any more: what was recorded turned out to be no line (a client that
  // closed before its request, an allowed request the connection's line stands for).
  void cancel() noexcept { owed_ = false; }

  // When active, the decision line waits for the process (attribution/probe.hpp).
  attribution::probe probe{};
  clock::time_point started = clock::now();

 private:
  void leave(close_facts* facts = nullptr) noexcept;

  decision_sink* sink_;
  decision_record* rec_ = nullptr;  // borrowed; null for a taken line
  std::string packed_;              // a taken close line
  // The notes the decision line carried, or not_decided. Narrow, with the two flags below
  // beside it: the line sits in every relayed connection's frame.
  static constexpr std::uint32_t not_decided = UINT32_MAX;
  std::uint32_t decided_notes_ = not_decided;
  timing timing_ = timing::as_recorded;
  bool owed_ = false;
};

}  // namespace airlock::record
