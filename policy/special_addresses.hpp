#pragma once
// The one place that knows which addresses a sandbox must never reach by name: the DNS
// answer filter, the proxy's connect step and the launcher all ask classify(). It follows
// IANA's special-purpose registries (RFC 6890 and successors) for every range that is
// not globally reachable, except the documentation ranges (192.0.2/24, 198.51.100/24,
// 203.0.113/24, 2001:db8::/32, 3fff::/20): nothing routes them, and test networks,
// airlock's own end-to-end tests among them, stand them in for the internet.
#include <boost/asio/ip/address.hpp>

#include <cstdint>
#include <string_view>

namespace airlock::policy {

enum class address_class : std::uint8_t {
  global,         // an ordinary routable address
  unspecified,    // 0.0.0.0, ::
  this_network,   // 0.0.0.0/8
  loopback,       // 127/8, ::1
  private_use,    // RFC 1918
  shared_cgnat,   // 100.64/10
  link_local,     // 169.254/16, fe80::/10
  metadata,       // cloud host endpoints: 169.254.169.254, fd00:ec2::254, Azure's 168.63.129.16
  unique_local,   // fc00::/7
  multicast,      // 224/4, ff00::/8
  reserved,       // 240/4, 255.255.255.255, 192.88.99/24, 100::/64, ORCHID, SRv6 SIDs
  ietf_protocol,  // 192.0.0.0/24: DS-Lite, NAT64 discovery, some clouds' host services
  benchmarking,   // 198.18/15 (also `airlock run`'s default sandbox pool), 2001:2::/48
};

// Classifies `a`; IPv6 forms that carry an IPv4 address (mapped, compatible, NAT64,
// 6to4, Teredo) are judged by the IPv4 inside, so ::ffff:127.0.0.1 is loopback.
address_class classify(const boost::asio::ip::address& a) noexcept;

inline bool is_special(address_class c) noexcept { return c != address_class::global; }

std::string_view to_string(address_class c) noexcept;

}  // namespace airlock::policy
