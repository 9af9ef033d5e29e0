#include "policy/own_addresses.hpp"

#include "policy/snapshot.hpp"
#include "policy/special_addresses.hpp"

#include <algorithm>

namespace airlock::policy {

own_addresses::own_addresses(std::vector<cidr> prefixes) : prefixes_(std::move(prefixes)) {
  std::sort(prefixes_.begin(), prefixes_.end(), [](const cidr& a, const cidr& b) {
    return a.network != b.network ? a.network < b.network : a.prefix < b.prefix;
  });
  prefixes_.erase(std::unique(prefixes_.begin(), prefixes_.end()), prefixes_.end());
}

bool own_addresses::contains(const boost::asio::ip::address& a) const noexcept {
  // A gateway has a handful of addresses and sandboxes: a scan beats a trie here.
  return std::any_of(prefixes_.begin(), prefixes_.end(), [&](const cidr& c) { return c.contains(a); });
}

bool reachable(const compiled_policy& p, const own_addresses* own, const boost::asio::ip::address& a,
               std::uint16_t port) noexcept {
  if (own != nullptr && own->contains(a)) return p.cidr_allowance(a, port, true) != nullptr;
  return !is_special(classify(a)) || p.cidr_allowance(a, port) != nullptr;
}

}  // namespace airlock::policy
