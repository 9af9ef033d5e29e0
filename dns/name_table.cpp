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

std::string name_table::key(std::string_view session, const boost::asio::ip::address& address) {
  std::string k;
  fill_key(k, session, address);
  return k;
}

bool name_table::record(std::string_view session, const boost::asio::ip::address& address, std::string_view name,
                        std::uint16_t query_id, std::uint32_t ttl_seconds, clock::time_point now) {
  const auto ttl = std::clamp(std::chrono::seconds(ttl_seconds), limits_.min_ttl, limits_.max_ttl);
  // Every answer renews or adds an entry: the key is built in a buffer kept between calls.
  thread_local std::string k;
  fill_key(k, session, address);
  std::unique_lock lock(mutex_);
  auto& names = by_key_[k];
  // Renewal: the same name again moves its expiry forward and costs no new entry.
  for (auto& e : names) {
    if (e.name == name) {
      e.expires = std::max(e.expires, now + ttl);
      e.query_id = query_id;
      return true;
    }
  }
  auto& count = per_session_[std::string(session)];
  if (count >= limits_.max_entries_per_session || entries_ >= limits_.max_entries ||
      names.size() >= limits_.max_names_per_address) {
    if (now - last_sweep_ < std::chrono::seconds(1)) return false;
    last_sweep_ = now;
    expire_locked(now);
    auto& again = by_key_[k];  // expire() may have erased the slot
    auto& count_now = per_session_[std::string(session)];
    if (count_now >= limits_.max_entries_per_session || entries_ >= limits_.max_entries ||
        again.size() >= limits_.max_names_per_address)
      return false;
    again.push_back({std::string(name), query_id, now + ttl});
    ++count_now;
    ++entries_;
    return true;
  }
  names.push_back({std::string(name), query_id, now + ttl});
  ++count;
  ++entries_;
  return true;
}

std::vector<name_table::entry> name_table::lookup(std::string_view session, const boost::asio::ip::address& address,
                                                  clock::time_point now) const {
  std::vector<entry> out;
  const auto k = key(session, address);
  std::shared_lock lock(mutex_);
  auto it = by_key_.find(k);
  if (it == by_key_.end()) return out;
  for (auto e = it->second.rbegin(); e != it->second.rend(); ++e)
    if (e->expires > now) out.push_back(*e);
  return out;
}

void name_table::expire(clock::time_point now) {
  std::unique_lock lock(mutex_);
  expire_locked(now);
}

std::size_t name_table::size() const noexcept {
  std::shared_lock lock(mutex_);
  return entries_;
}

void name_table::expire_locked(clock::time_point now) {
  for (auto it = by_key_.begin(); it != by_key_.end();) {
    auto& names = it->second;
    const auto before = names.size();
    names.erase(std::remove_if(names.begin(), names.end(), [&](const entry& e) { return e.expires <= now; }),
                names.end());
    const auto removed = before - names.size();
    if (removed > 0) {
      const auto session = it->first.substr(0, it->first.find('\0'));
      auto s = per_session_.find(session);
      if (s != per_session_.end()) {
        s->second -= std::min(s->second, removed);
        if (s->second == 0) per_session_.erase(s);
      }
      entries_ -= removed;
    }
    it = names.empty() ? by_key_.erase(it) : std::next(it);
  }
}

}  // namespace airlock::dns
