#include "dns/lookup.hpp"

#include "dns/wire.hpp"

#include <cstring>

namespace airlock::dns {

std::vector<boost::asio::ip::address> addresses_in(std::string_view packet) {
  std::vector<boost::asio::ip::address> out;
  auto msg = wire::parse_message(std::as_bytes(std::span(packet.data(), packet.size())));
  if (!msg.has_value()) return out;
  for (const auto& rr : msg->answers) {
    if (rr.rclass != wire::class_in) continue;
    if (rr.rtype == wire::type::a && rr.rdata.size() == 4) {
      boost::asio::ip::address_v4::bytes_type b;
      std::memcpy(b.data(), rr.rdata.data(), 4);
      out.emplace_back(boost::asio::ip::address_v4(b));
    } else if (rr.rtype == wire::type::aaaa && rr.rdata.size() == 16) {
      boost::asio::ip::address_v6::bytes_type b;
      std::memcpy(b.data(), rr.rdata.data(), 16);
      out.emplace_back(boost::asio::ip::address_v6(b));
    }
  }
  return out;
}

boost::asio::awaitable<address_list> lookup_addresses(resolver& r, const policy::domain_name& name) {
  auto v4 = co_await r.query(name.str(), wire::type::a);
  if (!v4.has_value()) co_return v4.error();
  auto found = addresses_in(*v4);
  if (!found.empty()) co_return found;
  auto v6 = co_await r.query(name.str(), wire::type::aaaa);
  if (!v6.has_value()) co_return v6.error();
  co_return addresses_in(*v6);
}

}  // namespace airlock::dns
