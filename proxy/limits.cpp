#include "proxy/limits.hpp"

#include <limits>

namespace airlock::proxy {

limiter::ticket::ticket(std::shared_ptr<state> s) : owner_(std::move(s)) {
  std::lock_guard lock(owner_->mutex);
  ++owner_->open;
  ++owner_->pending;
  // Counted before the check, so the one connection over the cap is the one refused.
  if (owner_->open > owner_->limits.connections) refused_ = "connections";
  else if (owner_->pending > owner_->limits.pending_handshakes) refused_ = "pending_handshakes";
}

limiter::ticket::~ticket() {
  std::lock_guard lock(owner_->mutex);
  if (pending_) --owner_->pending;
  --owner_->open;
  if (session_) {
    --session_->open;
    if (pending_) --session_->pending;
  }
}

void limiter::ticket::judged() noexcept {
  if (!pending_) return;
  std::lock_guard lock(owner_->mutex);
  --owner_->pending;
  if (session_) --session_->pending;
  pending_ = false;
}

std::string_view limiter::ticket::admit(const std::string& session) {
  const auto& l = owner_->limits;
  const auto now = core::token_bucket::clock::now();
  std::lock_guard lock(owner_->mutex);
  auto it = owner_->sessions.find(session);
  if (it == owner_->sessions.end())
    it = owner_->sessions
             .emplace(session, usage{0, core::token_bucket(l.session_connections_per_second,
                                                           2 * l.session_connections_per_second, now)})
             .first;
  session_ = &it->second;
  ++session_->open;
  if (pending_) ++session_->pending;
  if (l.session_connections && session_->open > l.session_connections) return "session_connections";
  if (l.session_pending_handshakes && session_->pending > l.session_pending_handshakes)
    return "session_pending_handshakes";
  if (l.session_connections_per_second > 0 && !session_->bucket.take(now)) return "session_connections_per_second";
  if (l.session_bytes_up && session_->bytes_up >= l.session_bytes_up) return "session_bytes_up";
  if (l.session_bytes_down && session_->bytes_down >= l.session_bytes_down) return "session_bytes_down";
  return {};
}

bool limiter::ticket::moved(bool up, std::uint64_t bytes) noexcept {
  if (!session_) return true;
  const auto& l = owner_->limits;
  const auto budget = up ? l.session_bytes_up : l.session_bytes_down;
  std::lock_guard lock(owner_->mutex);
  auto& count = up ? session_->bytes_up : session_->bytes_down;
  count += bytes;
  if (budget && count > budget) {
    spent_ = up ? "session_bytes_up" : "session_bytes_down";
    return false;
  }
  return true;
}

std::uint64_t limiter::ticket::room(bool up) const noexcept {
  const auto budget = up ? owner_->limits.session_bytes_up : owner_->limits.session_bytes_down;
  if (!session_ || budget == 0) return std::numeric_limits<std::uint64_t>::max();
  std::lock_guard lock(owner_->mutex);
  const auto used = up ? session_->bytes_up : session_->bytes_down;
  return used >= budget ? 0 : budget - used;
}

std::uint64_t limiter::open() const noexcept {
  std::lock_guard lock(state_->mutex);
  return state_->open;
}

std::uint64_t limiter::pending() const noexcept {
  std::lock_guard lock(state_->mutex);
  return state_->pending;
}

}  // namespace airlock::proxy
