#pragma once
// What airlock's DNS handed to whom: (session, address) -> the names it was the answer
// for, until a clamped TTL passes. Recorded before the answer leaves airlock, so a
// client's first connection never races its own lookup. The proxy reads it to allow a
// connection that carries no name (ssh to github.com:22, TLS without SNI) only towards
// an address this session got for an allowed name, and to name raw-IP connections in
// the log. Bounded per session and in total: it is keyed by data sandboxes control.
//
// Shared by every event loop: DNS answers write it, proxies on any loop read it, under one
// reader-writer lock (a write per allowed answer, a read per connection without a name).
#include <boost/asio/ip/address.hpp>

#include <chrono>
#include <cstdint>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace airlock::dns {

class name_table {
 public:
  using clock = std::chrono::steady_clock;

  struct limits {
    std::chrono::seconds min_ttl{30};   // a client may connect a little after a TTL-0 answer
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
  explicit name_table(limits l) : limits_(l) {}

  // Records that `session` was given `address` as an answer for `name`. Returns false
  // when a cap refused it (the caller counts it; the connection will be judged without).
  bool record(std::string_view session, const boost::asio::ip::address& address, std::string_view name,
              std::uint16_t query_id, std::uint32_t ttl_seconds, clock::time_point now);

  // The unexpired names under which `address` was handed to `session`, newest first.
  std::vector<entry> lookup(std::string_view session, const boost::asio::ip::address& address,
                            clock::time_point now) const;

  // Drops expired entries; called on a timer and when a cap is reached.
  void expire(clock::time_point now);

  std::size_t size() const noexcept;

 private:
  static std::string key(std::string_view session, const boost::asio::ip::address& address);
  void expire_locked(clock::time_point now);

  mutable std::shared_mutex mutex_;

  limits limits_;
  std::unordered_map<std::string, std::vector<entry>> by_key_;  // key: session \0 address bytes
  std::unordered_map<std::string, std::size_t> per_session_;
  std::size_t entries_ = 0;
  // When a cap last made record() sweep the whole table: at most once a second, or a
  // sandbox that keeps a cap full would buy a full walk with every query.
  clock::time_point last_sweep_{};
};

}  // namespace airlock::dns
