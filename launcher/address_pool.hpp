#pragma once
// Sandbox addresses: the pool (default 198.18.0.0/15, the benchmarking range, which no
// real network routes) is cut into /30 blocks; block i gives the gateway side of the veth
// the block's first host address and the sandbox its second. Pure: which blocks are taken
// is the caller's business (launcher/state.hpp keeps that under a lock).
#include "base/result.hpp"

#include <boost/asio/ip/address_v4.hpp>

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>

namespace airlock::launcher {

inline constexpr std::string_view default_pool = "198.18.0.0/15";

struct address_block {
  std::size_t index = 0;
  boost::asio::ip::address_v4 gateway;
  boost::asio::ip::address_v4 sandbox;
  static constexpr std::uint8_t prefix = 30;
};

class address_pool {
 public:
  // An IPv4 CIDR with room for at least one /30 ("198.18.0.0/15", "203.0.113.0/28").
  static base::result<address_pool> parse(std::string_view cidr);

  std::size_t capacity() const noexcept { return std::size_t{1} << (30 - prefix_); }
  address_block block(std::size_t index) const;  // precondition: index < capacity()
  // The lowest block not in `taken`, or none when the pool is full.
  std::optional<address_block> first_free(const std::set<std::size_t>& taken) const;
  // The block an address belongs to, when it lies in the pool.
  std::optional<std::size_t> index_of(boost::asio::ip::address_v4 a) const;
  std::string to_string() const;

 private:
  std::uint32_t base_ = 0;
  std::uint8_t prefix_ = 30;
};

}  // namespace airlock::launcher
