#pragma once
// Where the client meant to go. nft REDIRECT rewrote the destination to airlock's port:
// conntrack's original tuple keeps the one the client used (SO_ORIGINAL_DST for IPv4,
// IP6T_SO_ORIGINAL_DST for IPv6). TPROXY rewrote nothing: the accepted socket's local
// end is the address the client used, with or without connection tracking.
#include <boost/asio/ip/tcp.hpp>
#include <boost/system/result.hpp>

#include <system_error>

namespace airlock::proxy {

// How a transparent listener got the connection: each kind is read one way, with one
// system call (the listener says which, so the accepted socket need not be asked).
enum class interception { redirect, tproxy };

// `peer` is the client's end, as accepted: its family is the socket's (listeners are
// v6-only, so an IPv4 client is never v4-mapped), which saves asking the kernel.
boost::system::result<boost::asio::ip::tcp::endpoint, std::error_code> original_dst(
    boost::asio::ip::tcp::socket& socket, const boost::asio::ip::tcp::endpoint& peer, interception how) noexcept;

}  // namespace airlock::proxy
