#pragma once
// Building and walking netlink messages (rtnetlink and nfnetlink share the framing).
// Internal to launcher/.
#include <linux/netlink.h>
#include <linux/rtnetlink.h>

#include <boost/asio/ip/address_v4.hpp>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace airlock::launcher::netlink_detail {

inline constexpr std::size_t align4(std::size_t n) { return (n + 3) & ~std::size_t{3}; }

// One netlink request being built: header, a fixed struct, then attributes (nested ones
// by begin/end), each padded to 4 bytes as the kernel expects.
class request {
 public:
  // Acknowledged unless `ack` is false (nfnetlink's batch begin and end markers).
  request(std::uint16_t type, std::uint16_t flags, bool ack = true) : buf_(sizeof(nlmsghdr), 0) {
    auto h = header();
    h.nlmsg_type = type;
    h.nlmsg_flags = static_cast<std::uint16_t>(flags | NLM_F_REQUEST | (ack ? NLM_F_ACK : 0));
    set_header(h);
  }
  void set_seq(std::uint32_t seq) { std::memcpy(buf_.data() + offsetof(nlmsghdr, nlmsg_seq), &seq, sizeof seq); }
  template <typename T>
  void add_struct(const T& value) {
    append(&value, sizeof value);
  }
  void add_attr(std::uint16_t type, const void* data, std::size_t len) {
    rtattr a{};
    a.rta_type = type;
    a.rta_len = static_cast<unsigned short>(sizeof(rtattr) + len);
    append(&a, sizeof a);
    append(data, len);
  }
  void add_string(std::uint16_t type, const std::string& s) { add_attr(type, s.c_str(), s.size() + 1); }
  void add_u32(std::uint16_t type, std::uint32_t v) { add_attr(type, &v, sizeof v); }
  void add_v4(std::uint16_t type, boost::asio::ip::address_v4 a) {
    const auto bytes = a.to_bytes();
    add_attr(type, bytes.data(), bytes.size());
  }
  std::size_t begin_nest(std::uint16_t type) {
    const auto at = buf_.size();
    add_attr(type, nullptr, 0);
    return at;
  }
  void end_nest(std::size_t at) {
    rtattr a{};
    std::memcpy(&a, buf_.data() + at, sizeof a);
    a.rta_len = static_cast<unsigned short>(buf_.size() - at);
    std::memcpy(buf_.data() + at, &a, sizeof a);
  }
  std::vector<char>& finish() {
    auto h = header();
    h.nlmsg_len = static_cast<std::uint32_t>(buf_.size());
    set_header(h);
    return buf_;
  }

 private:
  nlmsghdr header() const {
    nlmsghdr h{};
    std::memcpy(&h, buf_.data(), sizeof h);
    return h;
  }
  void set_header(const nlmsghdr& h) { std::memcpy(buf_.data(), &h, sizeof h); }
  void append(const void* data, std::size_t len) {
    const auto at = buf_.size();
    buf_.resize(align4(at + len), 0);
    if (len != 0) std::memcpy(buf_.data() + at, data, len);
  }
  std::vector<char> buf_;
};

// Walks the netlink messages in buf[0, len).
template <typename F>
void for_each_message(const char* buf, std::size_t len, F&& f) {
  std::size_t off = 0;
  while (off + sizeof(nlmsghdr) <= len) {
    nlmsghdr h{};
    std::memcpy(&h, buf + off, sizeof h);
    if (h.nlmsg_len < sizeof(nlmsghdr) || off + h.nlmsg_len > len) return;
    if (!f(h, buf + off + sizeof(nlmsghdr), h.nlmsg_len - sizeof(nlmsghdr))) return;
    off += align4(h.nlmsg_len);
  }
}

}  // namespace airlock::launcher::netlink_detail
