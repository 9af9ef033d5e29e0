#pragma once
// Where a denial waits for a person or a program. A policy with `approval:` holds a DNS
// query or connection that its rules deny for want of a rule (host_not_allowed,
// port_not_allowed) for up to its wait, while the approvers watching the control socket
// (`airlock approve`, a harness, GET /v1/approvals) see its decision line as a question and
// one of them answers: allow-once, allow-session or deny. The held client sees only a delay.
// Without an answer in time the denial stands; with no approver watching it stands at once.
//
// A question is one (session, name, port): a client's retry, or its A and AAAA queries,
// join the open question instead of asking again. Each held query or connection is a hold,
// capped per session and in all; a hold beyond the caps is not made (the denial stands at
// once, said why). Nothing outlives its wait: every hold ends at its question's deadline at
// the latest, and a session that ends answers its questions deny.
//
// What an allow means is the answerer's business (the daemon makes a grant, then answers);
// here the answer is carried to every hold of the question, on each hold's own loop
// (base/answer_slot.hpp). One mutex; the data path takes it only when a denial is held.
#include "base/answer_slot.hpp"
#include "record/decision.hpp"
#include "record/line_queue.hpp"

#include <boost/asio/awaitable.hpp>
#include <boost/system/result.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace airlock::record {

enum class approval_answer : std::uint8_t { allow_once, allow_session, deny };
std::string_view to_string(approval_answer a) noexcept;  // "allow-once", "allow-session", "deny"
std::optional<approval_answer> parse_approval_answer(std::string_view text) noexcept;

class approval_desk {
 public:
  using clock = std::chrono::steady_clock;

  struct limits {
    std::size_t per_session = 32;  // 0: no cap of its own
    std::size_t total = 256;
  };

  // A denial to hold: `session`'s query (port 0) or connection to `name` on `port`, with its
  // decision line as the log would write it (the approver's view of it).
  struct question {
    std::string session;
    std::string name;
    std::uint16_t port = 0;
    std::string line;  // one JSON object, no newline
    clock::duration wait{};
  };

  struct answer {
    approval_answer what = approval_answer::deny;
    std::string by;     // who answered, as they said
    std::string grant;  // an allow's grant ("grant:g7"), made before the answer
  };

  enum class skip : std::uint8_t { no_approver, session_holds, holds };

  struct outcome {
    std::string id;                  // the question's ("a4")
    std::optional<answer> answered;  // none: no answer within the wait
    clock::duration held{};
  };

  // `stamp` gives a record its session's labels and tool call of the moment, as the log's
  // writer does, so the approver sees the line the log will have (the registry's).
  using stamper = std::function<void(decision_record&)>;
  approval_desk() : approval_desk(limits{}) {}
  explicit approval_desk(limits l, stamper stamp = {}) : limits_(l), stamp_(std::move(stamp)) {}

  // The question for `rec`, a denial as it stands, to `port` (0: a DNS query).
  question question_for(decision_record rec, std::uint16_t port, clock::duration wait) const;

  // On the caller's loop: holds it until an answer or the question's deadline. Refused at
  // once (skip) when no approver watches this session or a cap is reached.
  boost::asio::awaitable<boost::system::result<outcome, skip>> hold(question q);

  // The answering side. claim() takes an open question for one answerer (a second one, or
  // one too late, is told why); answer() then gives it to every hold of the question and
  // returns how many took it (0: they were gone by then).
  struct claimed {
    std::string id, session, name;
    std::uint16_t port = 0;
  };
  enum class claim_error : std::uint8_t { unknown, answered, expired };
  boost::system::result<claimed, claim_error> claim(std::string_view id, clock::time_point now);
  std::size_t give(std::string_view id, answer a);
  // A claimed question nobody will answer after all (making its grant failed): released,
  // its holds wait on to their deadline.
  void unclaim(std::string_view id);
  // The session ended: its questions are answered deny, by "session_closed".
  void forget(std::string_view session);

  // An approver's view: `session`'s questions (empty: every session's), the open ones at
  // once, oldest first, then each new one and each end, as JSON lines:
  //   {"event":"approval","id","session","name","port","wait_ms","expires_in_ms","expires_at_ms",
  //    "decision":{...}}   (expires_at_ms: the deadline in ms since the epoch)
  //   {"event":"approval_end","id","session","outcome":"allow-once|allow-session|deny|expired","by"}
  // While it is held, the questions of that session are asked.
  std::shared_ptr<line_queue> watch(std::string session, std::function<void()> wake, std::size_t capacity = 1024);
  std::size_t approvers();
  std::size_t holds() const;
  std::size_t questions() const;

 private:
  using slot = base::answer_slot<answer>;
  struct open_question {
    std::string id;
    question q;
    clock::time_point deadline;
    std::vector<std::shared_ptr<slot>> holds;
    bool claimed = false;
  };
  struct watcher {
    watcher(std::string s, std::size_t capacity, std::function<void()> wake)
        : session(std::move(s)), queue(capacity, std::move(wake)) {}
    std::string session;
    line_queue queue;
  };
  // Wake-ups to call once the mutex is let go, with what keeps their watchers alive.
  using wakes = std::vector<std::pair<std::shared_ptr<watcher>, const std::function<void()>*>>;

  // Under mutex_.
  bool watched(std::string_view session);
  std::vector<std::unique_ptr<open_question>>::iterator find(std::string_view id);
  void announce(std::string_view session, const std::string& line, wakes& woken);
  void ended(const open_question& q, std::string_view how, std::string_view by, wakes& woken);
  void release(const std::string& session, const std::string& id, const std::shared_ptr<slot>& s);
  static void wake_all(const wakes& woken);

  const limits limits_;
  const stamper stamp_;
  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<open_question>> open_;  // oldest first
  std::map<std::string, std::size_t, std::less<>> held_per_session_;
  std::size_t held_ = 0;
  std::uint64_t next_id_ = 1;
  std::vector<std::weak_ptr<watcher>> watchers_;
  // Recently ended questions and how: a late answer is told "answered" or "expired".
  std::deque<std::pair<std::string, bool>> recent_;  // (id, answered)
};

// The notes a held decision's line carries: approval:ID, held_ms:N, answer:KIND (none: no
// answer within the wait) and answer_by:TEXT; or approval_skipped:WHY when nothing was held.
// True when the answer allows (the caller then judges again, and finds the answer's grant).
bool note_approval(decision_record& rec,
                   const boost::system::result<approval_desk::outcome, approval_desk::skip>& held);

}  // namespace airlock::record
