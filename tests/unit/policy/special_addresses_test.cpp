#include "policy/special_addresses.hpp"

#include <doctest/doctest.h>

using airlock::policy::address_class;
using airlock::policy::classify;

namespace {

address_class of(const char* text) { return classify(boost::asio::ip::make_address(text)); }

}  // namespace

TEST_CASE("each IPv4 range at both edges") {
  struct row {
    const char* address;
    address_class expected;
  };
  const row rows[] = {
      {"0.0.0.0", address_class::unspecified},
      {"0.0.0.1", address_class::this_network},
      {"0.255.255.255", address_class::this_network},
      {"1.0.0.0", address_class::global},
      {"9.255.255.255", address_class::global},
      {"10.0.0.0", address_class::private_use},
      {"10.255.255.255", address_class::private_use},
      {"11.0.0.0", address_class::global},
      {"100.63.255.255", address_class::global},
      {"100.64.0.0", address_class::shared_cgnat},
      {"100.127.255.255", address_class::shared_cgnat},
      {"100.128.0.0", address_class::global},
      {"126.255.255.255", address_class::global},
      {"127.0.0.0", address_class::loopback},
      {"127.255.255.255", address_class::loopback},
      {"128.0.0.0", address_class::global},
      {"169.253.255.255", address_class::global},
      {"169.254.0.0", address_class::link_local},
      {"169.254.169.254", address_class::metadata},
      {"169.254.255.255", address_class::link_local},
      {"169.255.0.0", address_class::global},
      {"172.15.255.255", address_class::global},
      {"172.16.0.0", address_class::private_use},
      {"172.31.255.255", address_class::private_use},
      {"172.32.0.0", address_class::global},
      {"192.167.255.255", address_class::global},
      {"192.168.0.0", address_class::private_use},
      {"192.168.255.255", address_class::private_use},
      {"192.169.0.0", address_class::global},
      {"191.255.255.255", address_class::global},
      {"192.0.0.0", address_class::ietf_protocol},
      {"192.0.0.192", address_class::ietf_protocol},  // Oracle Cloud's metadata service
      {"192.0.0.255", address_class::ietf_protocol},
      {"192.0.1.0", address_class::global},
      {"192.0.2.1", address_class::global},  // documentation
      {"192.88.98.255", address_class::global},
      {"192.88.99.0", address_class::reserved},
      {"192.88.99.255", address_class::reserved},
      {"192.88.100.0", address_class::global},
      {"168.63.129.15", address_class::global},
      {"168.63.129.16", address_class::metadata},  // Azure's host endpoint
      {"168.63.129.17", address_class::global},
      {"198.17.255.255", address_class::global},
      {"198.18.0.0", address_class::benchmarking},  // airlock run's default sandbox pool
      {"198.19.255.255", address_class::benchmarking},
      {"198.20.0.0", address_class::global},
      {"198.51.100.10", address_class::global},
      {"203.0.113.10", address_class::global},  // documentation ranges are our test "internet"
      {"223.255.255.255", address_class::global},
      {"224.0.0.0", address_class::multicast},
      {"239.255.255.255", address_class::multicast},
      {"240.0.0.0", address_class::reserved},
      {"255.255.255.255", address_class::reserved},
  };
  for (const auto& r : rows) {
    CAPTURE(r.address);
    CHECK(of(r.address) == r.expected);
  }
}

TEST_CASE("IPv6 ranges and the forms that embed IPv4") {
  struct row {
    const char* address;
    address_class expected;
  };
  const row rows[] = {
      {"::", address_class::unspecified},
      {"::1", address_class::loopback},
      {"fe80::1", address_class::link_local},
      {"febf:ffff::1", address_class::link_local},
      {"fc00::1", address_class::unique_local},
      {"fdff:ffff::1", address_class::unique_local},
      {"fd00:ec2::254", address_class::metadata},
      {"ff02::1", address_class::multicast},
      {"2001:db8::1", address_class::global},
      {"2606:4700::1111", address_class::global},
      // IPv4-mapped and IPv4-compatible
      {"::ffff:127.0.0.1", address_class::loopback},
      {"::ffff:169.254.169.254", address_class::metadata},
      {"::ffff:10.1.2.3", address_class::private_use},
      {"::ffff:203.0.113.10", address_class::global},
      {"::10.1.2.3", address_class::private_use},
      // NAT64
      {"64:ff9b::a9fe:a9fe", address_class::metadata},
      {"64:ff9b::7f00:1", address_class::loopback},
      {"64:ff9b::cb00:710a", address_class::global},
      {"64:ff9b:1::1", address_class::private_use},
      // 6to4: 2002:c0a8:0101:: embeds 192.168.1.1
      {"2002:c0a8:101::1", address_class::private_use},
      {"2002:cb00:710a::1", address_class::global},
      // Teredo: client 10.0.0.1 stored inverted (f5ff:fffe), server 203.0.113.10
      {"2001:0:cb00:710a::f5ff:fffe", address_class::private_use},
      // Teredo with a loopback server
      {"2001:0:7f00:1::34ff:fef5", address_class::loopback},
  };
  for (const auto& r : rows) {
    CAPTURE(r.address);
    CHECK(of(r.address) == r.expected);
  }
}

TEST_CASE("the rest of IANA's IPv6 special-purpose registry") {
  CHECK(of("2001:2::1") == address_class::benchmarking);
  CHECK(of("2001:2:0:ffff::1") == address_class::benchmarking);
  CHECK(of("2001:3::1") == address_class::global);
  CHECK(of("2001:10::1") == address_class::reserved);  // ORCHID
  CHECK(of("2001:2f::1") == address_class::reserved);  // ORCHIDv2's last /32
  CHECK(of("2001:30::1") == address_class::global);
  CHECK(of("100::1") == address_class::reserved);  // discard-only
  CHECK(of("100:0:0:1::1") == address_class::global);
  CHECK(of("5f00::1") == address_class::reserved);    // SRv6 SIDs
  CHECK(of("2001:db8::1") == address_class::global);  // documentation: the test "internet"
  CHECK(of("::ffff:198.18.0.1") == address_class::benchmarking);
  CHECK(of("::ffff:168.63.129.16") == address_class::metadata);
}
