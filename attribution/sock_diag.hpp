// NETLINK_SOCK_DIAG messages for one inet socket (linux/inet_diag.h): building the request,
// parsing the reply. Sans-I/O, pure, never throw; attribution/diag_socket.cpp does the I/O.
//
// The kernel's exact lookup (no NLM_F_DUMP) is asymmetric: for TCP the request's `src` is the
// socket's local end, for UDP it is the remote end ("src and dst are swapped for historical
// reasons", net/ipv4/udp_diag.c). build_request hides that: callers pass a socket_key.
#pragma once

#include "attribution/socket_key.hpp"

#include <boost/asio/ip/address.hpp>
#include <boost/system/result.hpp>

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace airlock::attribution::sock_diag {

inline constexpr std::size_t request_size = 72;  // nlmsghdr (16) + inet_diag_req_v2 (56)

enum class request_kind : std::uint8_t {
  exact,  // the socket with exactly this key (UDP: an unconnected socket matches any remote)
  dump,   // every socket of the key's family and protocol in the namespace
};

// The request for `key`; a dump names only the family and protocol. Empty when the key mixes
// address families (no socket has an IPv4 end and an IPv6 end).
std::vector<std::byte> build_request(const socket_key& key, std::uint32_t seq, request_kind kind);

// The same dump for another address family (AF_INET6 also holds dual-stack sockets that talk IPv4).
std::vector<std::byte> build_dump_request(transport proto, bool v6, std::uint32_t seq);

struct socket_entry {
  bool v6 = false;
  std::uint8_t state = 0;  // TCP_ESTABLISHED = 1, ... (UDP: 7 unconnected, 1 connected)
  boost::asio::ip::address local_address;
  std::uint16_t local_port = 0;
  boost::asio::ip::address remote_address;
  std::uint16_t remote_port = 0;
  std::uint32_t uid = 0;
  std::uint32_t inode = 0;  // 0: no file holds it any more (orphaned, TIME_WAIT)
};

struct reply {
  std::vector<socket_entry> sockets;  // SOCK_DIAG_BY_FAMILY messages with the expected seq
  bool done = false;                  // the answer is complete: read no further
  int error = 0;                      // errno from NLMSG_ERROR (ENOENT: no such socket); 0 none
};

enum class parse_error {
  truncated,   // a header or payload is cut short
  bad_length,  // nlmsg_len smaller than its header or past the datagram
  overrun,     // NLMSG_OVERRUN: the kernel dropped part of the answer
};

// Parses one datagram read from the sock_diag socket. Messages with another seq (a late answer
// to an earlier, abandoned request on the same socket) are skipped. Whether more datagrams
// follow is in `done`: a non-multipart answer, NLMSG_DONE or NLMSG_ERROR ends it.
boost::system::result<reply, parse_error> parse_reply(std::span<const std::byte> datagram, std::uint32_t seq) noexcept;

}  // namespace airlock::attribution::sock_diag
