#pragma once
// Where the client meant to go before nft REDIRECT sent it to us (SO_ORIGINAL_DST for
// IPv4, IP6T_SO_ORIGINAL_DST for IPv6; both read conntrack's original tuple). A connection
// from a TPROXY listener was never translated: the same tuple says where it went, and
// without connection tracking its local end does.
#include <boost/asio/ip/tcp.hpp>
#include <boost/system/result.hpp>

#include <system_error>

namespace airlock::proxy {

// `peer` is the client's end, as accepted: its family is the socket's (listeners are
// v6-only, so an IPv4 client is never v4-mapped), which saves asking the kernel.
boost::system::result<boost::asio::ip::tcp::endpoint, std::error_code> original_dst(
    boost::asio::ip::tcp::socket& socket, const boost::asio::ip::tcp::endpoint& peer) noexcept;

}  // namespace airlock::proxy
