#pragma once
// Upstream answers kept for their TTL, shared by every session: the policy is checked
// per session BEFORE the cache is asked, so a cached answer never reaches a session that
// may not have the name. Positive answers live for their smallest TTL, negative ones
// (NXDOMAIN, NODATA) for the SOA's negative TTL (RFC 2308); SERVFAIL is never cached.
// Bounded: past the cap, entries go in the order they came, except that one read since it
// was last passed over gets another round (CLOCK, the second-chance approximation of least
// recently used: a read only sets a flag, so reads write nothing shared but that).
//
// The DNS loop fills it (store, shrink: writer only); the proxy's other event loops read
// it too (find: a cached name needs no hop to the DNS loop), without a lock
// (base/read_map.hpp; what a store replaces goes to the reclaimer it is given, which in the
// daemon waits for every loop: base/loop_grace.hpp).
#include "base/read_map.hpp"
#include "dns/wire.hpp"

#include <atomic>
#include <chrono>
#include <deque>
#include <optional>
#include <string>
#include <string_view>

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
  explicit answer_cache(limits l, base::reclaimer& r = base::free_at_once::instance()) : limits_(l), entries_(r) {}

  // A copy of the cached answer with every TTL reduced by its age, or nullopt. Any loop.
  std::optional<wire::message> find(std::string_view name, std::uint16_t qtype, clock::time_point now) const;
  // Keeps `answer` (as the upstream sent it) when it is cacheable. Writer only.
  void store(std::string_view name, std::uint16_t qtype, const wire::message& answer, clock::time_point now);

  // Drops entries as the clock hand meets them until at most `keep` are left (memory
  // pressure); how many went. Writer only.
  std::size_t shrink(std::size_t keep);

  std::size_t size() const noexcept { return entries_.size(); }

 private:
  struct entry {
    entry(const wire::message& a, clock::time_point s, clock::time_point e) : answer(a), stored(s), expires(e) {}
    entry(const entry& o)
        : answer(o.answer), stored(o.stored), expires(o.expires), read(o.read.load(std::memory_order_relaxed)) {}
    wire::message answer;
    clock::time_point stored;
    clock::time_point expires;
    mutable std::atomic<bool> read{false};  // since the clock hand last passed it
  };
  static void key(std::string& out, std::string_view name, std::uint16_t qtype);
  // Drops one entry: the first in `order_` that is expired or was not read since the hand
  // last passed it.
  void evict_one(clock::time_point now);

  limits limits_;
  base::read_map<entry> entries_;
  std::deque<std::string> order_;  // the writer's: keys in the order they came (the clock)
};

}  // namespace airlock::dns
