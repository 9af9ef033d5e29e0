#include "proxy/limits.hpp"

#include <limits>
#include <utility>

namespace airlock::proxy {

namespace {

constexpr auto relaxed = std::memory_order_relaxed;  // counters only: nothing else is published through them

}  // namespace

limiter::ticket::ticket(std::shared_ptr<state> s, session_index& index) : owner_(std::move(s)), index_(&index) {
  // Counted before the check, so the one connection over the cap is the one refused.
  const auto open = owner_->open.fetch_add(1, relaxed) + 1;
  const auto pending = owner_->pending.fetch_add(1, relaxed) + 1;
  if (open > owner_->limits.connections) refused_ = "connections";
  else if (pending > owner_->limits.pending_handshakes) refused_ = "pending_handshakes";
}

limiter::ticket::ticket(ticket&& other) noexcept
    : owner_(std::move(other.owner_)),
      index_(other.index_),
      session_(std::exchange(other.session_, nullptr)),
      pending_(other.pending_),
      refused_(other.refused_),
      spent_(other.spent_) {}

limiter::ticket::~ticket() {
  if (!owner_) return;  // moved from
  if (pending_) owner_->pending.fetch_sub(1, relaxed);
  owner_->open.fetch_sub(1, relaxed);
  if (session_) {
    session_->open.fetch_sub(1, relaxed);
    if (pending_) session_->pending.fetch_sub(1, relaxed);
  }
}

void limiter::ticket::judged() noexcept {
  if (!pending_) return;
  owner_->pending.fetch_sub(1, relaxed);
  if (session_) session_->pending.fetch_sub(1, relaxed);
  pending_ = false;
}

std::string_view limiter::ticket::admit(const std::string& session) {
  const auto& l = owner_->limits;
  const auto now = base::token_bucket::clock::now();
  auto known = index_->find(session);
  if (known == index_->end()) {
    std::lock_guard lock(owner_->mutex);  // the first time this loop meets the session
    auto& u = owner_->sessions.try_emplace(session, l.session_connections_per_second, now).first->second;
    known = index_->emplace(session, &u).first;
  }
  session_ = known->second;
  const auto open = session_->open.fetch_add(1, relaxed) + 1;
  const auto pending = pending_ ? session_->pending.fetch_add(1, relaxed) + 1 : 0;
  if (l.session_connections && open > l.session_connections) return "session_connections";
  if (l.session_pending_handshakes && pending > l.session_pending_handshakes) return "session_pending_handshakes";
  if (l.session_connections_per_second > 0 && !session_->bucket.take(now)) return "session_connections_per_second";
  if (l.session_bytes_up && session_->bytes_up.load(relaxed) >= l.session_bytes_up) return "session_bytes_up";
  if (l.session_bytes_down && session_->bytes_down.load(relaxed) >= l.session_bytes_down) return "session_bytes_down";
  return {};
}

bool limiter::ticket::moved(bool up, std::uint64_t bytes) noexcept {
  const auto budget = up ? owner_->limits.session_bytes_up : owner_->limits.session_bytes_down;
  if (!session_ || budget == 0) return true;  // nothing to meter: no shared counter touched
  auto& count = up ? session_->bytes_up : session_->bytes_down;
  if (count.fetch_add(bytes, relaxed) + bytes > budget) {
    spent_ = up ? "session_bytes_up" : "session_bytes_down";
    return false;
  }
  return true;
}

std::uint64_t limiter::ticket::room(bool up) const noexcept {
  const auto budget = up ? owner_->limits.session_bytes_up : owner_->limits.session_bytes_down;
  if (!session_ || budget == 0) return std::numeric_limits<std::uint64_t>::max();
  const auto used = (up ? session_->bytes_up : session_->bytes_down).load(relaxed);
  return used >= budget ? 0 : budget - used;
}

std::uint64_t limiter::open() const noexcept { return state_->open.load(relaxed); }

std::uint64_t limiter::pending() const noexcept { return state_->pending.load(relaxed); }

std::string_view limiter::full() const noexcept {
  const auto& l = state_->limits;
  if (state_->open.load(relaxed) >= l.connections) return "connections";
  if (state_->pending.load(relaxed) >= l.pending_handshakes) return "pending_handshakes";
  return {};
}

}  // namespace airlock::proxy
