#pragma once
// Upstream answers kept for their TTL, shared by every session: the policy is checked
// per session BEFORE the cache is asked, so a cached answer never reaches a session that
// may not have the name. Positive answers live for their smallest TTL, negative ones
// (NXDOMAIN, NODATA) for the SOA's negative TTL (RFC 2308); SERVFAIL is never cached.
// Bounded; least recently used entries go first. The DNS loop fills it; the proxy's other
// event loops read it too (a cached name needs no hop to the DNS loop), so each call holds
// one short lock.
#include "dns/wire.hpp"

#include <chrono>
#include <list>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

namespace airlock::dns {

class answer_cache {
 public:
  using clock = std::chrono::steady_clock;
  struct limits {
    std::size_t max_entries = 10000;
    std::chrono::seconds max_ttl{3600};
    std::chrono::seconds max_negative_ttl{300};
  };

  answer_cache() : answer_cache(limits{}) {}
  explicit answer_cache(limits l) : limits_(l) {}

  // A copy of the cached answer with every TTL reduced by its age, or nullopt.
  std::optional<wire::message> find(std::string_view name, std::uint16_t qtype, clock::time_point now);
  // Keeps `answer` (as the upstream sent it) when it is cacheable.
  void store(std::string_view name, std::uint16_t qtype, const wire::message& answer, clock::time_point now);

  // Drops the least recently used entries until at most `keep` are left (memory pressure);
  // how many went.
  std::size_t shrink(std::size_t keep);

  std::size_t size() const {
    const std::lock_guard lock(mutex_);
    return entries_.size();
  }

 private:
  struct entry {
    std::string key;
    wire::message answer;
    clock::time_point stored;
    clock::time_point expires;
  };
  static void key(std::string& out, std::string_view name, std::uint16_t qtype);

  limits limits_;
  mutable std::mutex mutex_;  // over everything below
  std::list<entry> lru_;  // most recently used first
  std::unordered_map<std::string, std::list<entry>::iterator> entries_;
  std::string lookup_key_;  // find()'s key, built in place: no allocation per lookup
};

}  // namespace airlock::dns
