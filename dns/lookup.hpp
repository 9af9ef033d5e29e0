#pragma once
// airlock's own resolution of a name, for the proxy: the addresses it will connect to,
// whatever address the client aimed at.
#include "dns/resolver.hpp"
#include "policy/domain_name.hpp"

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/address.hpp>

#include <vector>

namespace airlock::dns {

using address_list = boost::system::result<std::vector<boost::asio::ip::address>, resolve_error>;

// A records first; AAAA only when there are none. CNAME chains are followed by the
// upstream, so the addresses at the end of the chain are what comes back.
boost::asio::awaitable<address_list> lookup_addresses(resolver& r, const policy::domain_name& name);

// The A/AAAA addresses in an upstream answer (answer section only).
std::vector<boost::asio::ip::address> addresses_in(std::string_view packet);

}  // namespace airlock::dns
