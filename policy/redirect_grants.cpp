#include "policy/redirect_grants.hpp"

#include <algorithm>

namespace airlock::policy {
namespace {

std::string key_of(std::string_view session, std::string_view host) {
  std::string key;
  key.reserve(session.size() + 1 + host.size());
  key.append(session).push_back('\0');
  key.append(host);
  return key;
}

}  // namespace

redirect_grants::redirect_grants(limits l) : grants_(l), refusals_(l) {}

void redirect_grants::grant(std::string_view session, const domain_name& to_host, const domain_name& from_host,
                            std::string_view rule, clock::time_point now, clock::duration ttl, std::uint16_t port,
                            port_protocol protocol) {
  const locked lock(*this);
  std::uint32_t uses = 1;
  if (const auto* existing = grants_.find(session, to_host.str(), now)) uses = std::min(existing->uses + 1, max_uses);
  grants_.put(session, to_host.str(), {from_host.str(), std::string(rule), port, uses, protocol}, now + ttl, now);
}

std::optional<redirect_grants::origin> redirect_grants::peek(std::string_view session, const domain_name& host,
                                                             clock::time_point now) {
  if (empty()) return std::nullopt;
  const locked lock(*this);
  if (const auto* o = grants_.find(session, host.str(), now)) return *o;
  return std::nullopt;
}

std::optional<redirect_grants::origin> redirect_grants::take(std::string_view session, const domain_name& host,
                                                             clock::time_point now, std::uint16_t port, wire spoken) {
  if (empty()) return std::nullopt;
  const locked lock(*this);
  auto* o = grants_.find(session, host.str(), now);
  if (o == nullptr || (o->port != 0 && port != 0 && o->port != port) || !admits(o->protocol, spoken))
    return std::nullopt;
  if (o->uses > 1) {
    --o->uses;
    return *o;
  }
  return grants_.remove(session, host.str(), now);
}

void redirect_grants::refused(std::string_view session, const domain_name& host, const domain_name& from_host,
                              clock::time_point now) {
  const locked lock(*this);
  refusals_.put(session, host.str(), {from_host.str(), {}}, now + refusal_ttl, now);
}

std::optional<std::string> redirect_grants::refused_from(std::string_view session, const domain_name& host,
                                                         clock::time_point now) {
  if (empty()) return std::nullopt;
  const locked lock(*this);
  if (const auto* o = refusals_.find(session, host.str(), now)) return o->from_host;
  return std::nullopt;
}

void redirect_grants::forget(std::string_view session) {
  const locked lock(*this);
  grants_.forget(session);
  refusals_.forget(session);
}

std::size_t redirect_grants::size() const {
  const locked lock(*this);
  return grants_.size() + refusals_.size();
}

void redirect_grants::table::erase(iterator it) {
  if (auto s = per_session_.find(it->session); s != per_session_.end() && --s->second == 0) per_session_.erase(s);
  by_key_.erase(it->key);
  order_.erase(it);
}

void redirect_grants::table::sweep(clock::time_point now) {
  // Oldest first: entries usually expire in the order they were made, so this stops at
  // the first live one. A longer-lived entry in front holds the rest back only until the
  // caps or a lookup remove them.
  while (!order_.empty() && order_.front().expires <= now) erase(order_.begin());
}

void redirect_grants::table::put(std::string_view session, std::string_view host, origin o, clock::time_point expires,
                                 clock::time_point now) {
  sweep(now);
  if (limits_.per_session == 0 || limits_.total == 0) return;
  auto key = key_of(session, host);
  if (auto it = by_key_.find(key); it != by_key_.end()) erase(it->second);
  std::string owner(session);
  if (auto c = per_session_.find(owner); c != per_session_.end() && c->second >= limits_.per_session) {
    for (auto it = order_.begin(); it != order_.end(); ++it)
      if (it->session == owner) {
        erase(it);
        break;
      }
  }
  while (order_.size() >= limits_.total) erase(order_.begin());
  ++per_session_[owner];
  order_.push_back({key, std::move(owner), std::move(o), expires});
  by_key_.emplace(std::move(key), std::prev(order_.end()));
}

redirect_grants::origin* redirect_grants::table::find(std::string_view session, std::string_view host,
                                                      clock::time_point now) {
  sweep(now);
  const auto it = by_key_.find(key_of(session, host));
  if (it == by_key_.end()) return nullptr;
  if (it->second->expires <= now) {
    erase(it->second);
    return nullptr;
  }
  return &it->second->what;
}

std::optional<redirect_grants::origin> redirect_grants::table::remove(std::string_view session, std::string_view host,
                                                                      clock::time_point now) {
  if (!find(session, host, now)) return std::nullopt;
  const auto it = by_key_.find(key_of(session, host));
  auto out = std::move(it->second->what);
  erase(it->second);
  return out;
}

void redirect_grants::table::forget(std::string_view session) {
  for (auto it = order_.begin(); it != order_.end();) {
    const auto next = std::next(it);
    if (it->session == session) erase(it);
    it = next;
  }
}

}  // namespace airlock::policy
