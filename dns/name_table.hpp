#pragma once
// What airlock's DNS handed to whom: (session, address) -> the names it was the answer
// for, until a clamped TTL passes. Recorded before the answer leaves airlock, so a
// client's first connection never races its own lookup. The proxy reads it to allow a
// connection that carries no name (ssh to github.com:22, TLS without SNI) only towards
// an address this session got for an allowed name, and to name raw-IP connections in
// the log. Bounded per session and in total: it is keyed by data sandboxes control.
//
// Shared by every event loop without a lock: the DNS loop writes it (an answer renews or
// adds an entry), and a proxy connection without a name on any loop reads it
// (base/read_map.hpp; what a write replaces goes to the reclaimer it is given, which in
// the daemon waits for every loop: base/loop_grace.hpp). record() and expire() run on the
// writer's thread only.
#include "base/read_map.hpp"

#include <boost/asio/ip/address.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace airlock::dns {

class name_table {
 public:
  using clock = std::chrono::steady_clock;

  struct limits {
    std::chrono::seconds min_ttl{30};  // a client may connect a little after a TTL-0 answer
    std::chrono::seconds max_ttl{3600};
    std::size_t max_names_per_address = 16;  // shared CDN addresses carry many names
    std::size_t max_entries_per_session = 4096;
    std::size_t max_entries = 200000;
  };

  struct entry {
    std::string name;
    std::uint16_t query_id = 0;
    clock::time_point expires;
  };

  name_table() : name_table(limits{}) {}
  explicit name_table(limits l, base::reclaimer& r = base::free_at_once::instance()) : limits_(l), by_key_(r) {}

  // Records that `session` was given `address` as an answer for `name`. Returns false
  // when a cap refused it (the caller counts it; the connection will be judged without).
  bool record(std::string_view session, const boost::asio::ip::address& address, std::string_view name,
              std::uint16_t query_id, std::uint32_t ttl_seconds, clock::time_point now);

  // The unexpired names under which `address` was handed to `session`, newest first. Any
  // loop.
  std::vector<entry> lookup(std::string_view session, const boost::asio::ip::address& address,
                            clock::time_point now) const;

  // Drops expired entries; called on a timer and when a cap is reached. Writer only.
  void expire(clock::time_point now);

  std::size_t size() const noexcept { return entries_.load(std::memory_order_relaxed); }

 private:
  // A name under one key. A renewal (the same name in a later answer) changes only the
  // atomics, in place: most answers are renewals, and they cost no new node.
  struct slot {
    slot(std::string_view n, std::uint16_t id, clock::time_point e)
        : name(n), query_id(id), expires(e.time_since_epoch().count()) {}
    slot(const slot& o)
        : name(o.name),
          query_id(o.query_id.load(std::memory_order_relaxed)),
          expires(o.expires.load(std::memory_order_relaxed)) {}
    clock::time_point until() const noexcept {
      return clock::time_point(clock::duration(expires.load(std::memory_order_relaxed)));
    }
    std::string name;
    mutable std::atomic<std::uint16_t> query_id;
    mutable std::atomic<clock::rep> expires;
  };
  using slots = std::vector<slot>;  // oldest first

  limits limits_;
  base::read_map<slots> by_key_;  // key: session \0 address bytes
  // The writer's own (no reader): entries per session, for the cap.
  struct text_hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
  };
  std::unordered_map<std::string, std::size_t, text_hash, std::equal_to<>> per_session_;
  std::atomic<std::size_t> entries_{0};
  // When a cap last made record() sweep the whole table: at most once a second, or a
  // sandbox that keeps a cap full would buy a full walk with every query.
  clock::time_point last_sweep_{};
};

}  // namespace airlock::dns
