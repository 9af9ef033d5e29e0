#pragma once
// The addresses airlock's own resolution found for a name, kept by one event loop: a
// connection to a name its loop has met takes neither the shared answer cache's lock nor
// a copy of the cached answer. Each loop has its own (so it needs no lock either). Kept
// for the records' TTL, and never longer than a minute, so a loop reads the shared cache
// again at least once a minute per name; bounded, and forgotten whole when full (a loop
// meets few names, and each is then read once more).
#include "dns/lookup.hpp"

#include <boost/asio/ip/address.hpp>

#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace airlock::dns {

class address_memo {
 public:
  using clock = std::chrono::steady_clock;
  static constexpr std::size_t max_names = 1024;
  static constexpr std::chrono::seconds max_keep{60};

  // The addresses kept for `name` asked in `first` order, while they last; null otherwise.
  // Valid until the next keep().
  const std::vector<boost::asio::ip::address>* find(std::string_view name, ask_first first, clock::time_point now);
  // Keeps what a lookup found (nothing when it found no address, or its TTL is 0).
  void keep(std::string_view name, ask_first first, const found_addresses& found, clock::time_point now);

  std::size_t size() const noexcept { return kept_.size(); }

 private:
  struct kept {
    std::vector<boost::asio::ip::address> addresses;
    clock::time_point until;
  };
  // The name and one character for `first`: built in key_, no allocation per lookup.
  const std::string& key_of(std::string_view name, ask_first first);

  std::unordered_map<std::string, kept> kept_;
  std::string key_;
};

}  // namespace airlock::dns
