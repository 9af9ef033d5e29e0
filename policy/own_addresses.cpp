#include "policy/own_addresses.hpp"

#include "policy/snapshot.hpp"
#include "policy/special_addresses.hpp"

#include <algorithm>

namespace airlock::policy {

namespace {

using bytes16 = boost::asio::ip::address_v6::bytes_type;

// Every address as 16 bytes (IPv4 as ::ffff:a.b.c.d), with an IPv4 prefix moved past the
// 96 bits of the mapping, so both families share one ordering and one mask.
bytes16 wide(const boost::asio::ip::address& a) {
  if (a.is_v6()) return a.to_v6().to_bytes();
  return boost::asio::ip::make_address_v6(boost::asio::ip::v4_mapped, a.to_v4()).to_bytes();
}

bytes16 masked(bytes16 b, unsigned prefix) {
  for (unsigned i = 0; i < 16; ++i) {
    const unsigned keep = prefix >= 8 * (i + 1) ? 8 : prefix > 8 * i ? prefix - 8 * i : 0;
    b[i] = static_cast<unsigned char>(b[i] & (keep == 0 ? 0 : 0xff << (8 - keep)));
  }
  return b;
}

}  // namespace

own_addresses::own_addresses(std::vector<cidr> prefixes) : prefixes_(std::move(prefixes)) {
  std::sort(prefixes_.begin(), prefixes_.end(), [](const cidr& a, const cidr& b) {
    return a.network != b.network ? a.network < b.network : a.prefix < b.prefix;
  });
  prefixes_.erase(std::unique(prefixes_.begin(), prefixes_.end()), prefixes_.end());
  for (const auto& c : prefixes_) {
    const auto prefix = static_cast<std::uint8_t>(c.network.is_v4() ? c.prefix + 96 : c.prefix);
    auto g = std::find_if(groups_.begin(), groups_.end(), [&](const by_length& x) { return x.prefix == prefix; });
    if (g == groups_.end()) g = groups_.insert(groups_.end(), by_length{prefix, {}});
    g->networks.push_back(masked(wide(c.network), prefix));
  }
  for (auto& g : groups_) std::sort(g.networks.begin(), g.networks.end());
}

bool own_addresses::contains(const boost::asio::ip::address& a) const noexcept {
  const auto w = wide(a);
  return std::any_of(groups_.begin(), groups_.end(), [&](const by_length& g) {
    return std::binary_search(g.networks.begin(), g.networks.end(), masked(w, g.prefix));
  });
}

bool reachable(const compiled_policy& p, const own_addresses* own, const boost::asio::ip::address& a,
               std::uint16_t port) noexcept {
  if (own != nullptr && own->contains(a)) return p.cidr_allowance(a, port, true) != nullptr;
  return !is_special(classify(a)) || p.cidr_allowance(a, port) != nullptr;
}

}  // namespace airlock::policy
