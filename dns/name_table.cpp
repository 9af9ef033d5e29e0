#include "dns/name_table.hpp"

#include <algorithm>

namespace airlock::dns {

namespace {

void fill_key(std::string& k, std::string_view session, const boost::asio::ip::address& address) {
  k.assign(session);
  k += '\0';
  if (address.is_v4()) {
    const auto b = address.to_v4().to_bytes();
    k.append(reinterpret_cast<const char*>(b.data()), b.size());
  } else {
    const auto b = address.to_v6().to_bytes();
    k.append(reinterpret_cast<const char*>(b.data()), b.size());
  }
}

}  // namespace

bool name_table::record(std::string_view session, const boost::asio::ip::address& address, std::string_view name,
                        std::uint16_t query_id, std::uint32_t ttl_seconds, clock::time_point now) {
  const auto ttl = std::clamp(std::chrono::seconds(ttl_seconds), limits_.min_ttl, limits_.max_ttl);
  // Every answer renews or adds an entry: the key is built in a buffer kept between calls.
  thread_local std::string k;
  fill_key(k, session, address);
  const slots* names = by_key_.find(k);
  // Renewal: the same name again moves its expiry forward and costs no new entry.
  if (names != nullptr) {
    for (const auto& e : *names) {
      if (e.name == name) {
        e.expires.store(std::max(e.until(), now + ttl).time_since_epoch().count(), std::memory_order_relaxed);
        e.query_id.store(query_id, std::memory_order_relaxed);
        return true;
      }
    }
  }
  auto room = [&] {
    const auto it = per_session_.find(session);
    return (it == per_session_.end() || it->second < limits_.max_entries_per_session) && size() < limits_.max_entries &&
           (names == nullptr || names->size() < limits_.max_names_per_address);
  };
  if (!room()) {
    if (now - last_sweep_ < std::chrono::seconds(1)) return false;
    last_sweep_ = now;
    expire(now);
    names = by_key_.find(k);  // expire() may have replaced or erased it
    if (!room()) return false;
  }
  slots next = names != nullptr ? *names : slots{};
  next.emplace_back(name, query_id, now + ttl);
  by_key_.put(k, std::move(next));
  ++per_session_[std::string(session)];
  entries_.fetch_add(1, std::memory_order_relaxed);
  return true;
}

std::vector<name_table::entry> name_table::lookup(std::string_view session, const boost::asio::ip::address& address,
                                                  clock::time_point now) const {
  std::vector<entry> out;
  thread_local std::string k;
  fill_key(k, session, address);
  const slots* names = by_key_.find(k);
  if (names == nullptr) return out;
  for (auto e = names->rbegin(); e != names->rend(); ++e) {
    const auto until = e->until();
    if (until > now) out.push_back({e->name, e->query_id.load(std::memory_order_relaxed), until});
  }
  return out;
}

void name_table::expire(clock::time_point now) {
  // Collected first: the map is not changed while it is walked.
  std::vector<std::pair<std::string, slots>> shorter;
  std::vector<std::string> gone;
  by_key_.for_each([&](const std::string& key, const slots& names) {
    const auto live = static_cast<std::size_t>(
        std::count_if(names.begin(), names.end(), [&](const slot& e) { return e.until() > now; }));
    const auto removed = names.size() - live;
    if (removed == 0) return;
    if (auto s = per_session_.find(std::string_view(key).substr(0, key.find('\0'))); s != per_session_.end()) {
      s->second -= std::min(s->second, removed);
      if (s->second == 0) per_session_.erase(s);
    }
    entries_.fetch_sub(removed, std::memory_order_relaxed);
    if (live == 0) {
      gone.push_back(key);
      return;
    }
    slots kept;
    kept.reserve(live);
    for (const auto& e : names)
      if (e.until() > now) kept.push_back(e);
    shorter.emplace_back(key, std::move(kept));
  });
  for (const auto& key : gone) by_key_.erase(key);
  for (auto& [key, kept] : shorter) by_key_.put(key, std::move(kept));
}

}  // namespace airlock::dns
