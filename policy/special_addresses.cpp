#include "policy/special_addresses.hpp"

namespace airlock::policy {
namespace {

using boost::asio::ip::address_v4;
using boost::asio::ip::address_v6;

bool in(std::uint32_t a, std::uint32_t net, int prefix) {
  std::uint32_t mask = prefix == 0 ? 0 : ~std::uint32_t{0} << (32 - prefix);
  return (a & mask) == net;
}

constexpr std::uint32_t v4(unsigned a, unsigned b, unsigned c, unsigned d) {
  return (a << 24) | (b << 16) | (c << 8) | d;
}

address_class classify_v4(std::uint32_t a) {
  if (a == 0) return address_class::unspecified;
  if (a == v4(169, 254, 169, 254)) return address_class::metadata;
  if (a == v4(255, 255, 255, 255)) return address_class::reserved;
  // Azure's host endpoint (DHCP, DNS, the VM agent): the host's services, not the internet.
  if (a == v4(168, 63, 129, 16)) return address_class::metadata;
  if (in(a, v4(0, 0, 0, 0), 8)) return address_class::this_network;
  if (in(a, v4(127, 0, 0, 0), 8)) return address_class::loopback;
  if (in(a, v4(10, 0, 0, 0), 8) || in(a, v4(172, 16, 0, 0), 12) || in(a, v4(192, 168, 0, 0), 16))
    return address_class::private_use;
  if (in(a, v4(100, 64, 0, 0), 10)) return address_class::shared_cgnat;
  if (in(a, v4(169, 254, 0, 0), 16)) return address_class::link_local;
  if (in(a, v4(192, 0, 0, 0), 24)) return address_class::ietf_protocol;
  if (in(a, v4(198, 18, 0, 0), 15)) return address_class::benchmarking;
  if (in(a, v4(192, 88, 99, 0), 24)) return address_class::reserved;  // deprecated 6to4 relay anycast
  if (in(a, v4(224, 0, 0, 0), 4)) return address_class::multicast;
  if (in(a, v4(240, 0, 0, 0), 4)) return address_class::reserved;
  return address_class::global;
}

std::uint32_t read_v4(const address_v6::bytes_type& b, std::size_t at) {
  return (std::uint32_t{b[at]} << 24) | (std::uint32_t{b[at + 1]} << 16) | (std::uint32_t{b[at + 2]} << 8) |
         std::uint32_t{b[at + 3]};
}

bool prefix_is(const address_v6::bytes_type& b, std::initializer_list<unsigned> bytes) {
  std::size_t i = 0;
  for (unsigned v : bytes)
    if (b[i++] != v) return false;
  return true;
}

// The more dangerous of two embedded addresses decides (Teredo carries two).
address_class worse(address_class x, address_class y) { return is_special(x) ? x : y; }

address_class classify_v6(const address_v6& a) {
  const auto b = a.to_bytes();
  if (a.is_unspecified()) return address_class::unspecified;
  if (a.is_loopback()) return address_class::loopback;
  // fd00:ec2::254 is the AWS IMDS address over IPv6.
  static const address_v6 aws_metadata = boost::asio::ip::make_address_v6("fd00:ec2::254");
  if (a == aws_metadata) return address_class::metadata;
  if (a.is_v4_mapped()) return classify_v4(read_v4(b, 12));
  // IPv4-compatible ::a.b.c.d (deprecated, still routed by some stacks).
  if (prefix_is(b, {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0})) return classify_v4(read_v4(b, 12));
  // NAT64 well-known prefix 64:ff9b::/96 and the local-use 64:ff9b:1::/48.
  if (prefix_is(b, {0x00, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0})) return classify_v4(read_v4(b, 12));
  if (prefix_is(b, {0x00, 0x64, 0xff, 0x9b, 0x00, 0x01})) return address_class::private_use;
  // 6to4 2002:V4ADDR::/48.
  if (prefix_is(b, {0x20, 0x02})) return classify_v4(read_v4(b, 2));
  // Teredo 2001:0000:SERVER:flags:port:~CLIENT.
  if (prefix_is(b, {0x20, 0x01, 0x00, 0x00})) return worse(classify_v4(~read_v4(b, 12)), classify_v4(read_v4(b, 4)));
  // 2001:2::/48 benchmarking; 2001:10::/28 ORCHID, 2001:20::/28 ORCHIDv2 (not routed).
  if (prefix_is(b, {0x20, 0x01, 0x00, 0x02, 0x00, 0x00})) return address_class::benchmarking;
  if (b[0] == 0x20 && b[1] == 0x01 && b[2] == 0x00 && (b[3] & 0xf0) == 0x10) return address_class::reserved;
  if (b[0] == 0x20 && b[1] == 0x01 && b[2] == 0x00 && (b[3] & 0xf0) == 0x20) return address_class::reserved;
  // 100::/64 discard-only, 5f00::/16 SRv6 SIDs.
  if (prefix_is(b, {0x01, 0x00, 0, 0, 0, 0, 0, 0})) return address_class::reserved;
  if (prefix_is(b, {0x5f, 0x00})) return address_class::reserved;
  if (a.is_link_local()) return address_class::link_local;
  if ((b[0] & 0xfe) == 0xfc) return address_class::unique_local;
  if (a.is_multicast()) return address_class::multicast;
  // fec0::/10 site-local: deprecated, but still private wherever it is used.
  if (b[0] == 0xfe && (b[1] & 0xc0) == 0xc0) return address_class::private_use;
  return address_class::global;
}

}  // namespace

address_class classify(const boost::asio::ip::address& a) noexcept {
  if (a.is_v4()) return classify_v4(a.to_v4().to_uint());
  return classify_v6(a.to_v6());
}

std::string_view to_string(address_class c) noexcept {
  switch (c) {
    case address_class::global: return "global";
    case address_class::unspecified: return "unspecified";
    case address_class::this_network: return "this_network";
    case address_class::loopback: return "loopback";
    case address_class::private_use: return "private_use";
    case address_class::shared_cgnat: return "shared_cgnat";
    case address_class::link_local: return "link_local";
    case address_class::metadata: return "metadata";
    case address_class::unique_local: return "unique_local";
    case address_class::multicast: return "multicast";
    case address_class::reserved: return "reserved";
    case address_class::ietf_protocol: return "ietf_protocol";
    case address_class::benchmarking: return "benchmarking";
  }
  return "reserved";
}

}  // namespace airlock::policy
