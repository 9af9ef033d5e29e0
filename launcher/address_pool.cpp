#include "launcher/address_pool.hpp"

#include "policy/cidr.hpp"

namespace airlock::launcher {

base::result<address_pool> address_pool::parse(std::string_view cidr) {
  auto refuse = [&](std::string why) {
    return base::result<address_pool>(boost::system::in_place_error, "'" + std::string(cidr) + "': " + why);
  };
  auto c = policy::cidr::parse(cidr);
  if (!c) return refuse(c.error());
  if (!c->network.is_v4()) return refuse("the pool must be IPv4 (IPv6 is disabled inside sandboxes)");
  if (c->prefix > 30) return refuse("the pool must hold at least one /30 (a prefix of 30 or shorter)");
  address_pool p;
  p.base_ = c->network.to_v4().to_uint();
  p.prefix_ = c->prefix;
  return p;
}

address_block address_pool::block(std::size_t index) const {
  const auto first = base_ + static_cast<std::uint32_t>(index) * 4;
  return address_block{index, boost::asio::ip::address_v4(first + 1), boost::asio::ip::address_v4(first + 2)};
}

std::optional<address_block> address_pool::first_free(const std::set<std::size_t>& taken) const {
  std::size_t i = 0;
  for (auto t : taken) {
    if (t > i) break;
    if (t == i) ++i;
  }
  if (i >= capacity()) return std::nullopt;
  return block(i);
}

std::optional<std::size_t> address_pool::index_of(boost::asio::ip::address_v4 a) const {
  const auto v = a.to_uint();
  if (v < base_) return std::nullopt;
  const std::size_t i = (v - base_) / 4;
  if (i >= capacity()) return std::nullopt;
  return i;
}

std::string address_pool::to_string() const {
  return boost::asio::ip::address_v4(base_).to_string() + "/" + std::to_string(prefix_);
}

}  // namespace airlock::launcher
