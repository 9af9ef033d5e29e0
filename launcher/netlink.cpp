#include "launcher/netlink.hpp"

#include "base/errno_text.hpp"
#include "launcher/netlink_message.hpp"

#include <linux/if.h>
#include <linux/if_addr.h>
#include <linux/if_link.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/veth.h>
#include <sys/socket.h>

#include <array>
#include <cstddef>
#include <cstring>
#include <optional>

namespace airlock::launcher {
namespace {

using netlink_detail::align4;
using netlink_detail::for_each_message;
using netlink_detail::request;

std::string kernel_error(const char* what, int e) { return std::string(what) + ": " + base::errno_text(e); }

// Walks the attributes in [data, data+len).
template <typename F>
void for_each_attr(const char* data, std::size_t len, F&& f) {
  std::size_t off = 0;
  while (off + sizeof(rtattr) <= len) {
    rtattr a{};
    std::memcpy(&a, data + off, sizeof a);
    if (a.rta_len < sizeof(rtattr) || off + a.rta_len > len) return;
    f(a.rta_type, data + off + sizeof(rtattr), a.rta_len - sizeof(rtattr));
    off += align4(a.rta_len);
  }
}

boost::asio::ip::address_v4 read_v4(const char* p, std::size_t len) {
  boost::asio::ip::address_v4::bytes_type b{};
  if (len >= b.size()) std::memcpy(b.data(), p, b.size());
  return boost::asio::ip::address_v4(b);
}

}  // namespace

base::result<rtnetlink> rtnetlink::open() {
  base::unique_fd fd(::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE));
  if (!fd) return base::result<rtnetlink>(boost::system::in_place_error, kernel_error("netlink socket", errno));
  sockaddr_nl local{};
  local.nl_family = AF_NETLINK;
  if (::bind(fd.get(), reinterpret_cast<const sockaddr*>(&local), sizeof local) != 0)
    return base::result<rtnetlink>(boost::system::in_place_error, kernel_error("netlink bind", errno));
  return rtnetlink(std::move(fd));
}

base::result<int> rtnetlink::transact(std::vector<char>& message) {
  const auto seq = seq_++;
  std::memcpy(message.data() + offsetof(nlmsghdr, nlmsg_seq), &seq, sizeof seq);
  if (::send(fd_.get(), message.data(), message.size(), 0) < 0)
    return base::result<int>(boost::system::in_place_error, kernel_error("netlink send", errno));
  std::array<char, 8192> buf{};
  for (int reads = 0; reads < 64; ++reads) {
    const auto n = ::recv(fd_.get(), buf.data(), buf.size(), 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      return base::result<int>(boost::system::in_place_error, kernel_error("netlink recv", errno));
    }
    std::optional<int> answer;
    for_each_message(buf.data(), static_cast<std::size_t>(n),
                     [&](const nlmsghdr& h, const char* data, std::size_t len) {
                       if (h.nlmsg_seq != seq || h.nlmsg_type != NLMSG_ERROR || len < sizeof(nlmsgerr)) return true;
                       nlmsgerr e{};
                       std::memcpy(&e, data, sizeof e);
                       answer = -e.error;
                       return false;
                     });
    if (answer) return *answer;
  }
  return base::result<int>(boost::system::in_place_error, std::string("netlink: no acknowledgement from the kernel"));
}

base::result<void> rtnetlink::create_veth(const std::string& name, const std::string& peer, int peer_netns_fd) {
  request r(RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL);
  r.add_struct(ifinfomsg{});
  r.add_string(IFLA_IFNAME, name);
  const auto linkinfo = r.begin_nest(IFLA_LINKINFO);
  r.add_string(IFLA_INFO_KIND, "veth");
  const auto data = r.begin_nest(IFLA_INFO_DATA);
  const auto peer_info = r.begin_nest(VETH_INFO_PEER);
  r.add_struct(ifinfomsg{});
  r.add_string(IFLA_IFNAME, peer);
  r.add_u32(IFLA_NET_NS_FD, static_cast<std::uint32_t>(peer_netns_fd));
  r.end_nest(peer_info);
  r.end_nest(data);
  r.end_nest(linkinfo);
  auto e = transact(r.finish());
  if (!e) return e.error();
  if (*e != 0) return kernel_error(("create veth " + name).c_str(), *e);
  return {};
}

base::result<int> rtnetlink::link_index(const std::string& name) {
  // RTM_GETLINK answers with the link itself, then the acknowledgement.
  request r(RTM_GETLINK, 0);
  r.add_struct(ifinfomsg{});
  r.add_string(IFLA_IFNAME, name);
  auto& m = r.finish();
  const auto seq = seq_++;
  std::memcpy(m.data() + offsetof(nlmsghdr, nlmsg_seq), &seq, sizeof seq);
  if (::send(fd_.get(), m.data(), m.size(), 0) < 0)
    return base::result<int>(boost::system::in_place_error, kernel_error("netlink send", errno));
  std::array<char, 8192> buf{};
  std::optional<int> index;
  std::optional<int> error;
  for (int reads = 0; reads < 64 && !error; ++reads) {
    const auto n = ::recv(fd_.get(), buf.data(), buf.size(), 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      return base::result<int>(boost::system::in_place_error, kernel_error("netlink recv", errno));
    }
    for_each_message(buf.data(), static_cast<std::size_t>(n),
                     [&](const nlmsghdr& h, const char* data, std::size_t len) {
                       if (h.nlmsg_seq != seq) return true;
                       if (h.nlmsg_type == RTM_NEWLINK && len >= sizeof(ifinfomsg)) {
                         ifinfomsg info{};
                         std::memcpy(&info, data, sizeof info);
                         index = info.ifi_index;
                       } else if (h.nlmsg_type == NLMSG_ERROR && len >= sizeof(nlmsgerr)) {
                         nlmsgerr e{};
                         std::memcpy(&e, data, sizeof e);
                         error = -e.error;
                         return false;
                       }
                       return true;
                     });
  }
  if (error && *error != 0) return kernel_error(("find link " + name).c_str(), *error);
  if (!index) return "find link " + name + ": no answer";
  return *index;
}

base::result<void> rtnetlink::link_up(int index) {
  request r(RTM_NEWLINK, 0);
  ifinfomsg info{};
  info.ifi_index = index;
  info.ifi_flags = IFF_UP;
  info.ifi_change = IFF_UP;
  r.add_struct(info);
  auto e = transact(r.finish());
  if (!e) return e.error();
  if (*e != 0) return kernel_error("set link up", *e);
  return {};
}

base::result<bool> rtnetlink::delete_link(const std::string& name) {
  request r(RTM_DELLINK, 0);
  r.add_struct(ifinfomsg{});
  r.add_string(IFLA_IFNAME, name);
  auto e = transact(r.finish());
  if (!e) return e.error();
  if (*e == ENODEV) return false;
  if (*e != 0) return kernel_error(("delete link " + name).c_str(), *e);
  return true;
}

namespace {
// An RTM_NEWADDR/RTM_DELADDR message for one IPv4 address on interface `index`.
request address_request(std::uint16_t type, std::uint16_t flags, int index, boost::asio::ip::address_v4 address,
                        std::uint8_t prefix) {
  request r(type, flags);
  ifaddrmsg a{};
  a.ifa_family = AF_INET;
  a.ifa_prefixlen = prefix;
  a.ifa_index = static_cast<std::uint32_t>(index);
  r.add_struct(a);
  r.add_v4(IFA_LOCAL, address);
  return r;
}
}  // namespace

base::result<void> rtnetlink::add_address(int index, boost::asio::ip::address_v4 address, std::uint8_t prefix) {
  auto r = address_request(RTM_NEWADDR, NLM_F_CREATE | NLM_F_EXCL, index, address, prefix);
  r.add_v4(IFA_ADDRESS, address);
  auto e = transact(r.finish());
  if (!e) return e.error();
  if (*e != 0) return kernel_error(("add address " + address.to_string()).c_str(), *e);
  return {};
}

base::result<void> rtnetlink::delete_address(int index, boost::asio::ip::address_v4 address, std::uint8_t prefix) {
  auto r = address_request(RTM_DELADDR, 0, index, address, prefix);
  auto e = transact(r.finish());
  if (!e) return e.error();
  if (*e != 0 && *e != EADDRNOTAVAIL && *e != ENODEV)
    return kernel_error(("delete address " + address.to_string()).c_str(), *e);
  return {};
}

namespace {
request route_request(std::uint16_t type, std::uint16_t flags, const ipv4_route& route) {
  request r(type, flags);
  rtmsg m{};
  m.rtm_family = AF_INET;
  m.rtm_dst_len = route.prefix;
  m.rtm_table = route.table < 256 ? static_cast<unsigned char>(route.table)
                                  : static_cast<unsigned char>(RT_TABLE_UNSPEC);
  m.rtm_protocol = RTPROT_BOOT;
  m.rtm_scope = route.gateway.is_unspecified() ? RT_SCOPE_LINK : RT_SCOPE_UNIVERSE;
  m.rtm_type = RTN_UNICAST;
  r.add_struct(m);
  if (route.prefix != 0) r.add_v4(RTA_DST, route.destination);
  if (!route.gateway.is_unspecified()) r.add_v4(RTA_GATEWAY, route.gateway);
  if (route.oif != 0) r.add_u32(RTA_OIF, static_cast<std::uint32_t>(route.oif));
  r.add_u32(RTA_TABLE, route.table);
  return r;
}
}  // namespace

base::result<void> rtnetlink::add_route(const ipv4_route& route) {
  auto r = route_request(RTM_NEWROUTE, NLM_F_CREATE | NLM_F_EXCL, route);
  auto e = transact(r.finish());
  if (!e) return e.error();
  if (*e != 0)
    return kernel_error(("add route " + route.destination.to_string() + "/" + std::to_string(route.prefix) + " via " +
                         route.gateway.to_string())
                            .c_str(),
                        *e);
  return {};
}

base::result<void> rtnetlink::delete_route(const ipv4_route& route) {
  auto r = route_request(RTM_DELROUTE, 0, route);
  auto e = transact(r.finish());
  if (!e) return e.error();
  if (*e != 0 && *e != ESRCH) return kernel_error("delete route", *e);
  return {};
}

base::result<std::vector<ipv4_route>> rtnetlink::default_routes() {
  request r(RTM_GETROUTE, NLM_F_DUMP);
  rtmsg m{};
  m.rtm_family = AF_INET;
  r.add_struct(m);
  auto& msg = r.finish();
  const auto seq = seq_++;
  std::memcpy(msg.data() + offsetof(nlmsghdr, nlmsg_seq), &seq, sizeof seq);
  if (::send(fd_.get(), msg.data(), msg.size(), 0) < 0)
    return base::result<std::vector<ipv4_route>>(boost::system::in_place_error, kernel_error("netlink send", errno));
  std::vector<ipv4_route> out;
  std::vector<char> buf(32768);
  bool done = false;
  std::optional<int> error;
  for (int reads = 0; reads < 1024 && !done && !error; ++reads) {
    const auto n = ::recv(fd_.get(), buf.data(), buf.size(), 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      return base::result<std::vector<ipv4_route>>(boost::system::in_place_error, kernel_error("netlink recv", errno));
    }
    for_each_message(buf.data(), static_cast<std::size_t>(n),
                     [&](const nlmsghdr& h, const char* data, std::size_t len) {
                       if (h.nlmsg_seq != seq) return true;
                       if (h.nlmsg_type == NLMSG_DONE) {
                         done = true;
                         return false;
                       }
                       if (h.nlmsg_type == NLMSG_ERROR && len >= sizeof(nlmsgerr)) {
                         nlmsgerr e{};
                         std::memcpy(&e, data, sizeof e);
                         error = -e.error;
                         return false;
                       }
                       if (h.nlmsg_type != RTM_NEWROUTE || len < sizeof(rtmsg)) return true;
                       rtmsg rm{};
                       std::memcpy(&rm, data, sizeof rm);
                       if (rm.rtm_family != AF_INET || rm.rtm_dst_len != 0 || rm.rtm_type != RTN_UNICAST) return true;
                       ipv4_route route;
                       route.table = rm.rtm_table;
                       for_each_attr(data + align4(sizeof rm), len - align4(sizeof rm),
                                     [&](std::uint16_t type, const char* p, std::size_t l) {
                                       if (type == RTA_GATEWAY) route.gateway = read_v4(p, l);
                                       if (type == RTA_OIF && l >= 4) std::memcpy(&route.oif, p, 4);
                                       if (type == RTA_TABLE && l >= 4) std::memcpy(&route.table, p, 4);
                                     });
                       if (route.table == RT_TABLE_MAIN) out.push_back(route);
                       return true;
                     });
  }
  if (error && *error != 0)
    return base::result<std::vector<ipv4_route>>(boost::system::in_place_error, kernel_error("list routes", *error));
  return out;
}

}  // namespace airlock::launcher
