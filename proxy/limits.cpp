#include "proxy/limits.hpp"

namespace airlock::proxy {

limiter::ticket::ticket(limiter& l) : owner_(l) {
  ++owner_.open_;
  ++owner_.pending_;
  // Counted before the check, so the one connection over the cap is the one refused.
  if (owner_.open_ > owner_.limits_.connections) refused_ = "connections";
  else if (owner_.pending_ > owner_.limits_.pending_handshakes) refused_ = "pending_handshakes";
}

limiter::ticket::~ticket() {
  judged();
  --owner_.open_;
  if (session_) --session_->open;
}

void limiter::ticket::judged() noexcept {
  if (pending_) --owner_.pending_;
  pending_ = false;
}

std::string_view limiter::ticket::admit(const std::string& session) {
  const auto& l = owner_.limits_;
  const auto now = core::token_bucket::clock::now();
  auto it = owner_.sessions_.find(session);
  if (it == owner_.sessions_.end())
    it = owner_.sessions_
             .emplace(session, usage{0, core::token_bucket(l.session_connections_per_second,
                                                           2 * l.session_connections_per_second, now)})
             .first;
  session_ = &it->second;
  ++session_->open;
  if (l.session_connections && session_->open > l.session_connections) return "session_connections";
  if (l.session_connections_per_second > 0 && !session_->bucket.take(now)) return "session_connections_per_second";
  if (l.session_bytes_up && session_->bytes_up >= l.session_bytes_up) return "session_bytes_up";
  if (l.session_bytes_down && session_->bytes_down >= l.session_bytes_down) return "session_bytes_down";
  return {};
}

bool limiter::ticket::moved(bool up, std::uint64_t bytes) noexcept {
  if (!session_) return true;
  const auto& l = owner_.limits_;
  auto& count = up ? session_->bytes_up : session_->bytes_down;
  const auto budget = up ? l.session_bytes_up : l.session_bytes_down;
  count += bytes;
  if (budget && count > budget) {
    spent_ = up ? "session_bytes_up" : "session_bytes_down";
    return false;
  }
  return true;
}

}  // namespace airlock::proxy
