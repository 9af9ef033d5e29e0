#include "record/approval_desk.hpp"

#include "base/json_string.hpp"

#include <algorithm>

namespace airlock::record {

namespace {

constexpr std::size_t recent_kept = 1024;

long long ms(approval_desk::clock::duration d) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
}

}  // namespace

std::string_view to_string(approval_answer a) noexcept {
  switch (a) {
    case approval_answer::allow_once: return "allow-once";
    case approval_answer::allow_session: return "allow-session";
    case approval_answer::deny: return "deny";
  }
  return "deny";
}

std::optional<approval_answer> parse_approval_answer(std::string_view text) noexcept {
  for (auto a : {approval_answer::allow_once, approval_answer::allow_session, approval_answer::deny})
    if (to_string(a) == text) return a;
  return std::nullopt;
}

bool approval_desk::watched(std::string_view session) {
  bool any = false;
  std::erase_if(watchers_, [&](const std::weak_ptr<watcher>& w) {
    auto s = w.lock();
    if (!s) return true;
    any = any || s->session.empty() || s->session == session;
    return false;
  });
  return any;
}

std::vector<std::unique_ptr<approval_desk::open_question>>::iterator approval_desk::find(std::string_view id) {
  return std::find_if(open_.begin(), open_.end(), [&](const auto& q) { return q->id == id; });
}

void approval_desk::announce(std::string_view session, const std::string& line, wakes& woken) {
  for (const auto& w : watchers_)
    if (auto s = w.lock(); s && (s->session.empty() || s->session == session))
      if (const auto* wake = s->queue.offer(line)) woken.emplace_back(std::move(s), wake);
}

void approval_desk::wake_all(const wakes& woken) {
  // Outside the mutex: a wake-up posts to its watcher's loop.
  for (const auto& [w, wake] : woken) (*wake)();
}

namespace {

std::string question_line(const std::string& id, const approval_desk::question& q, long long wait_ms,
                          long long expires_in_ms) {
  std::string out = "{\"event\":\"approval\",\"id\":";
  out += base::json_quote(id);
  out += ",\"session\":" + base::json_quote(q.session);
  out += ",\"name\":" + base::json_quote(q.name);
  out += ",\"port\":" + (q.port == 0 ? std::string("null") : std::to_string(q.port));
  out += ",\"wait_ms\":" + std::to_string(wait_ms);
  out += ",\"expires_in_ms\":" + std::to_string(std::max(0LL, expires_in_ms));
  // The same as a moment (ms since the epoch), for a reader that takes the line late.
  const auto at = std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::system_clock::now().time_since_epoch())
                      .count() +
                  std::max(0LL, expires_in_ms);
  out += ",\"expires_at_ms\":" + std::to_string(at);
  out += ",\"decision\":" + (q.line.empty() ? std::string("null") : q.line);
  out += "}\n";
  return out;
}

}  // namespace

void approval_desk::ended(const open_question& q, std::string_view how, std::string_view by, wakes& woken) {
  std::string line = "{\"event\":\"approval_end\",\"id\":" + base::json_quote(q.id) +
                     ",\"session\":" + base::json_quote(q.q.session) + ",\"outcome\":" + base::json_quote(how) +
                     ",\"by\":" + (by.empty() ? std::string("null") : base::json_quote(by)) + "}\n";
  announce(q.q.session, line, woken);
  recent_.emplace_back(q.id, how != "expired");
  if (recent_.size() > recent_kept) recent_.pop_front();
}

boost::asio::awaitable<boost::system::result<approval_desk::outcome, approval_desk::skip>> approval_desk::hold(
    question q) {
  using result = boost::system::result<outcome, skip>;
  const auto start = clock::now();
  auto mine = std::make_shared<slot>();
  std::string id;
  clock::time_point deadline;
  const std::string session = q.session;
  wakes woken;
  {
    std::lock_guard lock(mutex_);
    if (!watched(session)) co_return result(skip::no_approver);
    auto& mine_held = held_per_session_[session];
    if (limits_.per_session != 0 && mine_held >= limits_.per_session) co_return result(skip::session_holds);
    if (held_ >= limits_.total) co_return result(skip::holds);
    auto same = std::find_if(open_.begin(), open_.end(), [&](const auto& o) {
      return !o->claimed && o->q.session == session && o->q.port == q.port && o->q.name == q.name;
    });
    if (same != open_.end()) {
      // A retry or a sibling query: it waits with the question asked already.
      id = (*same)->id;
      deadline = (*same)->deadline;
      (*same)->holds.push_back(mine);
    } else {
      auto o = std::make_unique<open_question>();
      o->id = id = "a" + std::to_string(next_id_++);
      o->deadline = deadline = start + q.wait;
      o->q = std::move(q);
      o->holds.push_back(mine);
      announce(session, question_line(o->id, o->q, ms(o->q.wait), ms(o->q.wait)), woken);
      open_.push_back(std::move(o));
    }
    ++mine_held;
    ++held_;
  }
  wake_all(woken);
  woken.clear();  // a local of the coroutine: it must not keep the watchers while it waits

  // The hold ends on every way out, a loop destroyed at shutdown included.
  struct release_on_exit {
    approval_desk* desk;
    const std::string& session;
    const std::string& id;
    const std::shared_ptr<slot>& s;
    ~release_on_exit() { desk->release(session, id, s); }
  } on_exit{this, session, id, mine};
  auto got = co_await mine->wait(deadline);
  co_return result(outcome{id, std::move(got), clock::now() - start});
}

void approval_desk::release(const std::string& session, const std::string& id, const std::shared_ptr<slot>& s) {
  wakes woken;
  {
    std::lock_guard lock(mutex_);
    if (auto it = held_per_session_.find(session); it != held_per_session_.end() && --it->second == 0)
      held_per_session_.erase(it);
    --held_;
    auto q = find(id);
    if (q == open_.end()) return;  // answered (or forgotten) already: its end was said then
    std::erase(q->get()->holds, s);
    if (!(*q)->holds.empty()) return;
    // Its last hold's wait is over: the question is no more.
    ended(**q, "expired", "", woken);
    open_.erase(q);
  }
  wake_all(woken);
}

boost::system::result<approval_desk::claimed, approval_desk::claim_error> approval_desk::claim(std::string_view id,
                                                                                               clock::time_point now) {
  std::lock_guard lock(mutex_);
  auto q = find(id);
  if (q == open_.end()) {
    auto r = std::find_if(recent_.rbegin(), recent_.rend(), [&](const auto& e) { return e.first == id; });
    if (r == recent_.rend()) return claim_error::unknown;
    return r->second ? claim_error::answered : claim_error::expired;
  }
  auto& o = **q;
  if (o.claimed) return claim_error::answered;
  if (now >= o.deadline) return claim_error::expired;
  o.claimed = true;
  return claimed{o.id, o.q.session, o.q.name, o.q.port};
}

void approval_desk::unclaim(std::string_view id) {
  std::lock_guard lock(mutex_);
  if (auto q = find(id); q != open_.end()) (*q)->claimed = false;
}

std::size_t approval_desk::give(std::string_view id, answer a) {
  std::vector<std::shared_ptr<slot>> holds;
  wakes woken;
  {
    std::lock_guard lock(mutex_);
    auto q = find(id);
    if (q == open_.end()) return 0;
    holds = std::move((*q)->holds);
    ended(**q, to_string(a.what), a.by, woken);
    open_.erase(q);
  }
  wake_all(woken);
  std::size_t took = 0;
  for (const auto& s : holds)
    if (s->give(a)) ++took;
  return took;
}

void approval_desk::forget(std::string_view session) {
  std::vector<std::shared_ptr<slot>> holds;
  wakes woken;
  {
    std::lock_guard lock(mutex_);
    for (auto q = open_.begin(); q != open_.end();) {
      if ((*q)->q.session != session) {
        ++q;
        continue;
      }
      for (auto& s : (*q)->holds) holds.push_back(std::move(s));
      ended(**q, "deny", "session_closed", woken);
      q = open_.erase(q);
    }
  }
  wake_all(woken);
  for (const auto& s : holds) s->give(answer{approval_answer::deny, "session_closed", {}});
}

std::shared_ptr<line_queue> approval_desk::watch(std::string session, std::function<void()> wake,
                                                 std::size_t capacity) {
  auto w = std::make_shared<watcher>(std::move(session), capacity, std::move(wake));
  std::lock_guard lock(mutex_);
  const auto now = clock::now();
  for (const auto& o : open_)
    if (!o->claimed && (w->session.empty() || w->session == o->q.session))
      w->queue.offer(question_line(o->id, o->q, ms(o->q.wait), ms(o->deadline - now)));
  watchers_.push_back(w);
  return std::shared_ptr<line_queue>(w, &w->queue);
}

std::size_t approval_desk::approvers() {
  std::lock_guard lock(mutex_);
  std::erase_if(watchers_, [](const auto& w) { return w.expired(); });
  return watchers_.size();
}

std::size_t approval_desk::holds() const {
  std::lock_guard lock(mutex_);
  return held_;
}

std::size_t approval_desk::questions() const {
  std::lock_guard lock(mutex_);
  return open_.size();
}

bool note_approval(decision_record& rec,
                   const boost::system::result<approval_desk::outcome, approval_desk::skip>& held) {
  if (!held.has_value()) {
    switch (held.error()) {
      case approval_desk::skip::no_approver: rec.notes.push_back("approval_skipped:no_approver"); break;
      case approval_desk::skip::session_holds: rec.notes.push_back("approval_skipped:limit:session_holds"); break;
      case approval_desk::skip::holds: rec.notes.push_back("approval_skipped:limit:holds"); break;
    }
    return false;
  }
  rec.notes.push_back("approval:" + held->id);
  rec.notes.push_back("held_ms:" + std::to_string(ms(held->held)));
  if (!held->answered) {
    rec.notes.push_back("answer:none");
    return false;
  }
  rec.notes.push_back("answer:" + std::string(to_string(held->answered->what)));
  if (!held->answered->by.empty()) rec.notes.push_back("answer_by:" + held->answered->by);
  return held->answered->what != approval_answer::deny;
}

approval_desk::question approval_desk::question_for(decision_record rec, std::uint16_t port,
                                                    clock::duration wait) const {
  if (stamp_) stamp_(rec);
  std::string line = render_json_line(rec);
  if (!line.empty() && line.back() == '\n') line.pop_back();
  return {rec.session, rec.name, port, std::move(line), wait};
}

}  // namespace airlock::record
