#include "dns/reply_source.hpp"

#include <cstring>

namespace airlock::dns {

bool ask_for_destinations(int fd, bool ipv6) noexcept {
  const int on = 1;
  if (ipv6) return ::setsockopt(fd, IPPROTO_IPV6, IPV6_RECVPKTINFO, &on, sizeof on) == 0;
  return ::setsockopt(fd, IPPROTO_IP, IP_PKTINFO, &on, sizeof on) == 0;
}

reply_source reply_source::of(const msghdr& received) noexcept {
  reply_source out;
  // CMSG_NXTHDR takes a non-const header; it only reads it.
  auto& h = const_cast<msghdr&>(received);
  for (cmsghdr* c = CMSG_FIRSTHDR(&h); c != nullptr; c = CMSG_NXTHDR(&h, c)) {
    if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_PKTINFO && c->cmsg_len >= CMSG_LEN(sizeof(in_pktinfo))) {
      in_pktinfo info;
      std::memcpy(&info, CMSG_DATA(c), sizeof info);
      info.ipi_ifindex = 0;  // the routing table picks the interface; the source is what matters
      auto* o = reinterpret_cast<cmsghdr*>(out.control_.data());
      o->cmsg_level = IPPROTO_IP;
      o->cmsg_type = IP_PKTINFO;
      o->cmsg_len = CMSG_LEN(sizeof info);
      std::memcpy(CMSG_DATA(o), &info, sizeof info);
      out.length_ = CMSG_SPACE(sizeof info);
      return out;
    }
    if (c->cmsg_level == IPPROTO_IPV6 && c->cmsg_type == IPV6_PKTINFO && c->cmsg_len >= CMSG_LEN(sizeof(in6_pktinfo))) {
      // The interface stays: a link-local address means nothing without it.
      auto* o = reinterpret_cast<cmsghdr*>(out.control_.data());
      o->cmsg_level = IPPROTO_IPV6;
      o->cmsg_type = IPV6_PKTINFO;
      o->cmsg_len = CMSG_LEN(sizeof(in6_pktinfo));
      std::memcpy(CMSG_DATA(o), CMSG_DATA(c), sizeof(in6_pktinfo));
      out.length_ = CMSG_SPACE(sizeof(in6_pktinfo));
      return out;
    }
  }
  return out;
}

void reply_source::attach(msghdr& out) noexcept {
  out.msg_control = length_ != 0 ? control_.data() : nullptr;
  out.msg_controllen = length_;
}

}  // namespace airlock::dns
