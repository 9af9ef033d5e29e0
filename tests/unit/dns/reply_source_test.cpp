#include "dns/reply_source.hpp"

#include <doctest/doctest.h>

#include <arpa/inet.h>

#include <array>
#include <cstring>

using airlock::dns::reply_source;

namespace {

// A received datagram's header carrying one control message of `level`/`type` with `data`.
template <typename T>
struct received {
  alignas(cmsghdr) std::array<unsigned char, CMSG_SPACE(sizeof(T))> control{};
  msghdr h{};
  received(int level, int type, const T& data) {
    h.msg_control = control.data();
    h.msg_controllen = control.size();
    auto* c = CMSG_FIRSTHDR(&h);
    c->cmsg_level = level;
    c->cmsg_type = type;
    c->cmsg_len = CMSG_LEN(sizeof(T));
    std::memcpy(CMSG_DATA(c), &data, sizeof(T));
  }
};

template <typename T>
T sent_as(reply_source& s, int level, int type) {
  msghdr out{};
  s.attach(out);
  auto* c = CMSG_FIRSTHDR(&out);
  REQUIRE(c != nullptr);
  CHECK(c->cmsg_level == level);
  CHECK(c->cmsg_type == type);
  T data;
  std::memcpy(&data, CMSG_DATA(c), sizeof(T));
  return data;
}

}  // namespace

TEST_CASE("IPv4: the answer leaves from the query's address; the routing table picks the interface") {
  in_pktinfo info{};
  info.ipi_ifindex = 7;
  inet_pton(AF_INET, "127.0.0.2", &info.ipi_spec_dst);
  inet_pton(AF_INET, "127.0.0.2", &info.ipi_addr);
  received<in_pktinfo> r(IPPROTO_IP, IP_PKTINFO, info);
  auto s = reply_source::of(r.h);
  REQUIRE(s.known());
  const auto out = sent_as<in_pktinfo>(s, IPPROTO_IP, IP_PKTINFO);
  CHECK(out.ipi_ifindex == 0);
  CHECK(std::memcmp(&out.ipi_spec_dst, &info.ipi_spec_dst, sizeof info.ipi_spec_dst) == 0);
}

TEST_CASE("IPv6: the address and its interface (a link-local address means nothing without it)") {
  in6_pktinfo info{};
  info.ipi6_ifindex = 3;
  inet_pton(AF_INET6, "fe80::1", &info.ipi6_addr);
  received<in6_pktinfo> r(IPPROTO_IPV6, IPV6_PKTINFO, info);
  auto s = reply_source::of(r.h);
  REQUIRE(s.known());
  const auto out = sent_as<in6_pktinfo>(s, IPPROTO_IPV6, IPV6_PKTINFO);
  CHECK(out.ipi6_ifindex == 3);
  CHECK(std::memcmp(&out.ipi6_addr, &info.ipi6_addr, sizeof info.ipi6_addr) == 0);
}

TEST_CASE("nothing said, or something else: the reply goes without a control message") {
  msghdr none{};
  auto s = reply_source::of(none);
  CHECK_FALSE(s.known());
  msghdr out{};
  out.msg_controllen = 99;
  s.attach(out);
  CHECK(out.msg_control == nullptr);
  CHECK(out.msg_controllen == 0);
  received<int> other(SOL_SOCKET, SO_TIMESTAMP, 1);
  CHECK_FALSE(reply_source::of(other.h).known());
}
