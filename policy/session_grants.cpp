#include "policy/session_grants.hpp"

#include <algorithm>

namespace airlock::policy {

namespace {

bool name_matches(const rule_config& t, std::string_view name) noexcept {
  if (t.type == rule_config::kind::host) return name == t.pattern;
  if (t.type != rule_config::kind::wildcard) return false;
  // "*.suffix": any depth below the suffix, never the suffix itself.
  return name.size() > t.pattern.size() + 1 && name.ends_with(t.pattern) &&
         name[name.size() - t.pattern.size() - 1] == '.';
}

// What `t` lets be spoken on `port`, when it opens it (port 0: DNS, which any port's grant
// lets resolve).
std::optional<port_protocol> opens(const rule_config& t, std::uint16_t port) noexcept {
  if (port == 0) return port_protocol::any;
  if (!t.ports.empty() && !std::binary_search(t.ports.begin(), t.ports.end(), port)) return std::nullopt;
  for (const auto& e : t.protocols)
    if (e.port == port) return e.protocol;
  return default_protocol(port);
}

}  // namespace

std::string_view to_string(session_grants::end_reason r) noexcept {
  switch (r) {
    case session_grants::end_reason::revoked: return "revoked";
    case session_grants::end_reason::expired: return "expired";
    case session_grants::end_reason::tool_call_ended: return "tool_call_ended";
    case session_grants::end_reason::session_closed: return "session_closed";
    case session_grants::end_reason::used_up: return "used_up";
  }
  return "unknown";
}

boost::system::result<session_grants::view, session_grants::refusal> session_grants::add(request r,
                                                                                         clock::time_point now) {
  std::lock_guard lock(mutex_);
  sweep_locked(now);
  auto& list = sessions_[r.session];
  if (limits_.per_session != 0 && list.size() >= limits_.per_session) return refusal::session_full;
  if (total_ >= limits_.total) return refusal::total_full;
  auto g = std::make_unique<grant>();
  g->what.id = "g" + std::to_string(next_id_++);
  g->what.session = std::move(r.session);
  g->what.allow = std::move(r.allow);
  g->what.tool_call = std::move(r.tool_call);
  g->what.by = std::move(r.by);
  g->what.connections_left = r.connections;
  g->what.cut = r.cut;
  g->targets = std::move(r.targets);
  if (r.lasts) g->expires = now + *r.lasts;
  view v = g->what;
  v.expires_in = r.lasts;
  list.push_back(std::move(g));
  ++total_;
  publish_count();
  return v;
}

std::vector<session_grants::view> session_grants::list(std::string_view session, clock::time_point now) {
  std::lock_guard lock(mutex_);
  sweep_locked(now, true);
  std::vector<view> out;
  if (auto it = sessions_.find(session); it != sessions_.end())
    for (const auto& g : it->second) {
      out.push_back(g->what);
      if (g->expires) out.back().expires_in = *g->expires - now;
    }
  return out;
}

template <typename Pred>
void session_grants::end_if(session_list& list, end_reason why, Pred ending) {
  for (auto it = list.begin(); it != list.end();) {
    grant& g = **it;
    if (!ending(g)) {
      ++it;
      continue;
    }
    ended e{g.what, why, 0};
    if (why != end_reason::used_up && g.what.cut)
      for (auto& weak : g.connections)
        if (auto s = weak.lock(); s && !s->pulled()) {
          s->pull();
          ++e.cut;
        }
    ended_.push_back(std::move(e));
    it = list.erase(it);
    --total_;
  }
  publish_count();
}

void session_grants::sweep_locked(clock::time_point now, bool always) {
  // A connection's lookup skips expired grants itself; it sweeps at most once a second.
  if (total_ == 0 || (!always && now - last_sweep_ < std::chrono::seconds(1))) return;
  last_sweep_ = now;
  for (auto it = sessions_.begin(); it != sessions_.end();) {
    end_if(it->second, end_reason::expired, [&](const grant& g) { return g.expires && *g.expires <= now; });
    it = it->second.empty() ? sessions_.erase(it) : std::next(it);
  }
}

bool session_grants::revoke(std::string_view session, std::string_view id, clock::time_point now) {
  std::lock_guard lock(mutex_);
  sweep_locked(now);
  auto it = sessions_.find(session);
  if (it == sessions_.end()) return false;
  const auto before = ended_.size();
  end_if(it->second, end_reason::revoked, [&](const grant& g) { return g.what.id == id; });
  return ended_.size() != before;
}

void session_grants::tool_call_changed(std::string_view session, std::string_view current, clock::time_point now) {
  std::lock_guard lock(mutex_);
  sweep_locked(now);
  if (auto it = sessions_.find(session); it != sessions_.end())
    end_if(it->second, end_reason::tool_call_ended,
           [&](const grant& g) { return !g.what.tool_call.empty() && g.what.tool_call != current; });
}

void session_grants::forget(std::string_view session, clock::time_point now) {
  std::lock_guard lock(mutex_);
  sweep_locked(now);
  auto it = sessions_.find(session);
  if (it == sessions_.end()) return;
  end_if(it->second, end_reason::session_closed, [](const grant&) { return true; });
  sessions_.erase(it);
}

void session_grants::sweep(clock::time_point now) {
  std::lock_guard lock(mutex_);
  sweep_locked(now, true);
}

std::vector<session_grants::ended> session_grants::drain_ended() {
  std::lock_guard lock(mutex_);
  return std::exchange(ended_, {});
}

std::optional<session_grants::use> session_grants::peek(std::string_view session, const domain_name& name,
                                                        std::uint16_t port, wire spoken, clock::time_point now) {
  return find(session, name, port, spoken, now, false);
}

std::optional<session_grants::use> session_grants::take(std::string_view session, const domain_name& name,
                                                        std::uint16_t port, wire spoken, clock::time_point now) {
  return find(session, name, port, spoken, now, true);
}

std::optional<session_grants::use> session_grants::find(std::string_view session, const domain_name& name,
                                                        std::uint16_t port, wire spoken, clock::time_point now,
                                                        bool consume) {
  if (live_.load(std::memory_order_acquire) == 0) return std::nullopt;
  std::lock_guard lock(mutex_);
  auto it = sessions_.find(session);
  if (it == sessions_.end()) return std::nullopt;
  auto& list = it->second;
  for (auto g = list.begin(); g != list.end(); ++g) {
    grant& x = **g;
    if (x.expires && *x.expires <= now) continue;  // ended by the sweep below
    for (const auto& t : x.targets) {
      if (!name_matches(t, name.str())) continue;
      const auto protocol = opens(t, port);
      if (!protocol || !admits(*protocol, spoken)) continue;
      use u{x.what.rule(), *protocol, nullptr};
      if (!consume) return u;
      ++x.what.used;
      if (x.what.cut) {
        u.cut = std::make_shared<base::cut_switch>();
        // Switches of connections that ended are dropped as the list doubles.
        if (x.connections.size() >= 16 && (x.connections.size() & (x.connections.size() - 1)) == 0)
          std::erase_if(x.connections, [](const auto& w) { return w.expired(); });
        x.connections.push_back(u.cut);
      }
      if (x.what.connections_left && --*x.what.connections_left == 0)
        end_if(list, end_reason::used_up, [&](const grant& y) { return &y == &x; });
      sweep_locked(now);
      return u;
    }
  }
  sweep_locked(now);
  return std::nullopt;
}

std::size_t session_grants::size() const {
  std::lock_guard lock(mutex_);
  return total_;
}

}  // namespace airlock::policy
