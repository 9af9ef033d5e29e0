#pragma once
// Addresses that are airlock's own or its sandboxes': every address on the gateway's
// interfaces, the addresses its listeners are bound to, and the source prefixes of the
// sessions registered at run time (each one a sandbox). To a sandbox they are special
// addresses like loopback: no DNS answer hands them out and no connection reaches them,
// a cidr rule's included, unless that rule says `own: true`. The daemon rebuilds the set
// when an interface address or a registration changes (policy/store.hpp publishes it).
#include "policy/cidr.hpp"

#include <boost/asio/ip/address.hpp>

#include <cstdint>
#include <vector>

namespace airlock::policy {

class compiled_policy;

class own_addresses {
 public:
  explicit own_addresses(std::vector<cidr> prefixes);

  // One binary search per distinct prefix length (a gateway has /32s, /128s and the
  // sandboxes' /30s, whatever their number): a connect and a DNS answer ask it per address.
  bool contains(const boost::asio::ip::address& a) const noexcept;
  const std::vector<cidr>& prefixes() const noexcept { return prefixes_; }

 private:
  struct by_length {
    std::uint8_t prefix;
    std::vector<boost::asio::ip::address_v6::bytes_type> networks;  // sorted; IPv4 as mapped
  };
  std::vector<cidr> prefixes_;
  std::vector<by_length> groups_;
};

// Whether a sandbox under `p` may be sent to (DNS, `port` any_port) or connect to `a` on
// `port`: one of `own` only through a cidr rule with `own: true`; another special address
// (policy/special_addresses.hpp) only through a cidr rule covering it; a global one always
// (its name, or the cidr rule, was judged before).
bool reachable(const compiled_policy& p, const own_addresses* own, const boost::asio::ip::address& a,
               std::uint16_t port) noexcept;

}  // namespace airlock::policy
