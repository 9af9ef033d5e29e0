#pragma once
// An address prefix ("10.0.0.0/8", "2001:db8::/32", a bare address = a host prefix).
#include "base/result.hpp"

#include <boost/asio/ip/address.hpp>

#include <cstdint>
#include <string>
#include <string_view>

namespace airlock::policy {

struct cidr {
  boost::asio::ip::address network;  // host bits zero
  std::uint8_t prefix = 0;

  // Parses "ADDR/LEN" or "ADDR"; host bits set below the prefix are an error (a typo
  // like 10.0.0.1/8 usually means something other than 10.0.0.0/8).
  static base::result<cidr> parse(std::string_view text);

  bool contains(const boost::asio::ip::address& a) const noexcept;
  std::string to_string() const;
  bool operator==(const cidr&) const = default;
};

// Parses "ADDR:PORT" or "[V6]:PORT".
struct endpoint_config {
  boost::asio::ip::address address;
  std::uint16_t port = 0;
  static base::result<endpoint_config> parse(std::string_view text);
  std::string to_string() const;
};

}  // namespace airlock::policy
