#include "attribution/sock_diag.hpp"

#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstring>
#include <limits>

namespace airlock::attribution::sock_diag {
namespace {

namespace ip = boost::asio::ip;

static_assert(sizeof(nlmsghdr) + sizeof(inet_diag_req_v2) == request_size);
static_assert(NLMSG_HDRLEN == sizeof(nlmsghdr));

// The address as the kernel's four 32-bit words, in network byte order.
void put_address(std::uint32_t (&words)[4], const ip::address& a) {
  if (a.is_v4()) {
    const auto bytes = a.to_v4().to_bytes();
    std::memcpy(&words[0], bytes.data(), bytes.size());
  } else {
    const auto bytes = a.to_v6().to_bytes();
    std::memcpy(&words[0], bytes.data(), bytes.size());
  }
}

ip::address get_address(const std::uint32_t (&words)[4], bool v6) {
  if (!v6) {
    ip::address_v4::bytes_type bytes;
    std::memcpy(bytes.data(), &words[0], bytes.size());
    return ip::address_v4(bytes);
  }
  ip::address_v6::bytes_type bytes;
  std::memcpy(bytes.data(), &words[0], bytes.size());
  return ip::address_v6(bytes);
}

std::vector<std::byte> serialize(const inet_diag_req_v2& req, std::uint32_t seq, bool dump) {
  nlmsghdr header{};
  header.nlmsg_len = request_size;
  header.nlmsg_type = SOCK_DIAG_BY_FAMILY;
  header.nlmsg_flags = static_cast<std::uint16_t>(NLM_F_REQUEST | (dump ? NLM_F_DUMP : 0));
  header.nlmsg_seq = seq;
  std::vector<std::byte> out(request_size);
  std::memcpy(out.data(), &header, sizeof header);
  std::memcpy(out.data() + sizeof header, &req, sizeof req);
  return out;
}

inet_diag_req_v2 base_request(transport proto, bool v6) {
  inet_diag_req_v2 req{};
  req.sdiag_family = v6 ? AF_INET6 : AF_INET;
  req.sdiag_protocol = proto == transport::tcp ? IPPROTO_TCP : IPPROTO_UDP;
  req.idiag_states = ~0U;  // any state: a socket may already be closing
  req.id.idiag_cookie[0] = INET_DIAG_NOCOOKIE;
  req.id.idiag_cookie[1] = INET_DIAG_NOCOOKIE;
  return req;
}

}  // namespace

std::vector<std::byte> build_dump_request(transport proto, bool v6, std::uint32_t seq) {
  return serialize(base_request(proto, v6), seq, true);
}

std::vector<std::byte> build_request(const socket_key& key, std::uint32_t seq, request_kind kind) {
  const auto local = unmapped(key.local_address);
  const auto remote = unmapped(key.remote_address);
  if (local.is_v6() != remote.is_v6()) return {};
  if (kind == request_kind::dump) return build_dump_request(key.proto, local.is_v6(), seq);

  inet_diag_req_v2 req = base_request(key.proto, local.is_v6());
  // TCP looks the socket up as (src = local, dst = remote); UDP as the receive path does,
  // (src = packet source = remote, dst = local). See the header.
  const bool swap = key.proto == transport::udp;
  put_address(req.id.idiag_src, swap ? remote : local);
  put_address(req.id.idiag_dst, swap ? local : remote);
  req.id.idiag_sport = htons(swap ? key.remote_port : key.local_port);
  req.id.idiag_dport = htons(swap ? key.local_port : key.remote_port);
  return serialize(req, seq, false);
}

boost::system::result<reply, parse_error> parse_reply(std::span<const std::byte> datagram, std::uint32_t seq) noexcept {
  reply out;
  std::size_t offset = 0;
  while (datagram.size() - offset >= sizeof(nlmsghdr)) {
    nlmsghdr header;
    std::memcpy(&header, datagram.data() + offset, sizeof header);
    if (header.nlmsg_len < sizeof header || header.nlmsg_len > datagram.size() - offset) return parse_error::bad_length;
    const auto payload = datagram.subspan(offset + sizeof header, header.nlmsg_len - sizeof header);
    // Messages are 4-byte aligned; the last one may lack its padding.
    offset += std::min<std::size_t>(NLMSG_ALIGN(header.nlmsg_len), datagram.size() - offset);
    if (header.nlmsg_seq != seq) continue;

    switch (header.nlmsg_type) {
      case NLMSG_DONE: out.done = true; return out;
      case NLMSG_OVERRUN: return parse_error::overrun;
      case NLMSG_ERROR: {
        nlmsgerr err;
        if (payload.size() < sizeof err.error) return parse_error::truncated;
        std::memcpy(&err.error, payload.data(), sizeof err.error);
        // error 0 is an acknowledgement; a negative errno is the answer. INT_MIN cannot be negated.
        out.error = err.error < 0 && err.error != std::numeric_limits<int>::min() ? -err.error : 0;
        out.done = true;
        return out;
      }
      case SOCK_DIAG_BY_FAMILY: {
        inet_diag_msg msg;
        if (payload.size() < sizeof msg) return parse_error::truncated;
        std::memcpy(&msg, payload.data(), sizeof msg);
        if (msg.idiag_family != AF_INET && msg.idiag_family != AF_INET6) break;  // not ours to read
        socket_entry e;
        e.v6 = msg.idiag_family == AF_INET6;
        e.state = msg.idiag_state;
        e.local_address = get_address(msg.id.idiag_src, e.v6);
        e.local_port = ntohs(msg.id.idiag_sport);
        e.remote_address = get_address(msg.id.idiag_dst, e.v6);
        e.remote_port = ntohs(msg.id.idiag_dport);
        e.uid = msg.idiag_uid;
        e.inode = msg.idiag_inode;
        try {
          out.sockets.push_back(std::move(e));
        } catch (...) {
          return parse_error::truncated;  // out of memory: as good as an unreadable answer
        }
        if ((header.nlmsg_flags & NLM_F_MULTI) == 0) {
          out.done = true;
          return out;
        }
        break;
      }
      default: break;  // NLMSG_NOOP and anything newer: skip
    }
  }
  if (offset != datagram.size()) return parse_error::truncated;
  return out;
}

}  // namespace airlock::attribution::sock_diag
