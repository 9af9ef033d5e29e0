#pragma once
// The address a UDP answer leaves from: the one its query was sent to. A socket bound to a
// wildcard address (0.0.0.0, ::) would otherwise answer from whatever address the route
// back to the client picks: a query to a host's second address, or to 127.0.0.2, gets its
// answer from another address, and the client drops it as an answer from a stranger. The
// kernel says where each datagram went (IP_PKTINFO, IPV6_PKTINFO) and takes the same as the
// reply's source; as unbound does, the interface is left to the routing table for IPv4.
#include <array>
#include <cstddef>

#include <netinet/in.h>
#include <sys/socket.h>

namespace airlock::dns {

// Asks the kernel to say where each datagram went; false when it cannot (then answers leave
// as the route picks, as before).
bool ask_for_destinations(int fd, bool ipv6) noexcept;

class reply_source {
 public:
  // Room for either family's control message.
  static constexpr std::size_t control_room = CMSG_SPACE(sizeof(in6_pktinfo));

  // Where the datagram `received` was sent, from its control messages (nothing known: the
  // route decides).
  static reply_source of(const msghdr& received) noexcept;

  // Makes `out`, a reply about to be sent, leave from that address (its control buffer
  // points into this object, which must outlive the send).
  void attach(msghdr& out) noexcept;

  bool known() const noexcept { return length_ != 0; }

 private:
  alignas(cmsghdr) std::array<unsigned char, control_room> control_{};
  std::size_t length_ = 0;
};

}  // namespace airlock::dns
