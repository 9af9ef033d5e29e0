#include "attribution/sock_diag.hpp"

#include <doctest/doctest.h>

#include <arpa/inet.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>

#include <cstring>
#include <vector>

namespace at = airlock::attribution;
namespace sd = airlock::attribution::sock_diag;
namespace ip = boost::asio::ip;

namespace {

struct decoded_request {
  nlmsghdr header;
  inet_diag_req_v2 req;
};

decoded_request decode(const std::vector<std::byte>& bytes) {
  REQUIRE(bytes.size() == sd::request_size);
  decoded_request d{};
  std::memcpy(&d.header, bytes.data(), sizeof d.header);
  std::memcpy(&d.req, bytes.data() + sizeof d.header, sizeof d.req);
  return d;
}

std::string v4_text(const std::uint32_t (&words)[4]) {
  char buf[INET_ADDRSTRLEN];
  return inet_ntop(AF_INET, &words[0], buf, sizeof buf);
}

at::socket_key key(at::transport proto, const char* local, std::uint16_t lport, const char* remote,
                   std::uint16_t rport) {
  return at::socket_key::make(proto, ip::make_address(local), lport, ip::make_address(remote), rport);
}

// Builders for kernel replies.
void append_message(std::vector<std::byte>& out, std::uint16_t type, std::uint16_t flags, std::uint32_t seq,
                    const void* payload, std::size_t size, bool pad = true) {
  nlmsghdr h{};
  h.nlmsg_len = static_cast<std::uint32_t>(sizeof h + size);
  h.nlmsg_type = type;
  h.nlmsg_flags = flags;
  h.nlmsg_seq = seq;
  const auto at_ = out.size();
  out.resize(at_ + (pad ? NLMSG_ALIGN(h.nlmsg_len) : h.nlmsg_len));
  std::memcpy(out.data() + at_, &h, sizeof h);
  if (size > 0) std::memcpy(out.data() + at_ + sizeof h, payload, size);
}

inet_diag_msg diag_msg(const char* local, std::uint16_t lport, const char* remote, std::uint16_t rport,
                       std::uint32_t inode, std::uint8_t state = 1) {
  inet_diag_msg m{};
  m.idiag_family = AF_INET;
  m.idiag_state = state;
  inet_pton(AF_INET, local, &m.id.idiag_src[0]);
  inet_pton(AF_INET, remote, &m.id.idiag_dst[0]);
  m.id.idiag_sport = htons(lport);
  m.id.idiag_dport = htons(rport);
  m.idiag_uid = 1000;
  m.idiag_inode = inode;
  return m;
}

void append_diag(std::vector<std::byte>& out, std::uint32_t seq, const inet_diag_msg& m, bool multi) {
  append_message(out, SOCK_DIAG_BY_FAMILY, multi ? NLM_F_MULTI : 0, seq, &m, sizeof m);
}

void append_error(std::vector<std::byte>& out, std::uint32_t seq, int error) {
  nlmsgerr e{};
  e.error = error;
  append_message(out, NLMSG_ERROR, 0, seq, &e, sizeof e);
}

}  // namespace

TEST_CASE("build_request: TCP names the socket as (src = local, dst = remote)") {
  const auto d = decode(sd::build_request(key(at::transport::tcp, "198.51.100.2", 40000, "203.0.113.10", 443), 7,
                                          sd::request_kind::exact));
  CHECK(d.header.nlmsg_len == sd::request_size);
  CHECK(d.header.nlmsg_type == SOCK_DIAG_BY_FAMILY);
  CHECK(d.header.nlmsg_flags == NLM_F_REQUEST);
  CHECK(d.header.nlmsg_seq == 7);
  CHECK(d.req.sdiag_family == AF_INET);
  CHECK(d.req.sdiag_protocol == IPPROTO_TCP);
  CHECK(d.req.idiag_states == ~0U);
  CHECK(v4_text(d.req.id.idiag_src) == "198.51.100.2");
  CHECK(ntohs(d.req.id.idiag_sport) == 40000);
  CHECK(v4_text(d.req.id.idiag_dst) == "203.0.113.10");
  CHECK(ntohs(d.req.id.idiag_dport) == 443);
  CHECK(d.req.id.idiag_cookie[0] == INET_DIAG_NOCOOKIE);
  CHECK(d.req.id.idiag_cookie[1] == INET_DIAG_NOCOOKIE);
}

TEST_CASE("build_request: UDP names it as the receive path does (src = remote, dst = local)") {
  const auto d = decode(sd::build_request(key(at::transport::udp, "198.51.100.2", 40001, "198.51.100.1", 53), 8,
                                          sd::request_kind::exact));
  CHECK(d.req.sdiag_protocol == IPPROTO_UDP);
  CHECK(v4_text(d.req.id.idiag_src) == "198.51.100.1");
  CHECK(ntohs(d.req.id.idiag_sport) == 53);
  CHECK(v4_text(d.req.id.idiag_dst) == "198.51.100.2");
  CHECK(ntohs(d.req.id.idiag_dport) == 40001);
}

TEST_CASE("build_request: IPv6, IPv4-mapped keys, dumps and impossible keys") {
  const auto v6 = decode(
      sd::build_request(key(at::transport::tcp, "2001:db8::2", 1, "2001:db8::1", 2), 1, sd::request_kind::exact));
  CHECK(v6.req.sdiag_family == AF_INET6);
  ip::address_v6::bytes_type src;
  std::memcpy(src.data(), &v6.req.id.idiag_src[0], src.size());
  CHECK(ip::address_v6(src).to_string() == "2001:db8::2");

  // A dual-stack listener sees an IPv4 client as ::ffff:a.b.c.d; the sandbox's socket is IPv4.
  const auto mapped = decode(sd::build_request(
      key(at::transport::tcp, "::ffff:198.51.100.2", 1, "::ffff:203.0.113.10", 2), 1, sd::request_kind::exact));
  CHECK(mapped.req.sdiag_family == AF_INET);
  CHECK(v4_text(mapped.req.id.idiag_src) == "198.51.100.2");

  const auto dump = decode(
      sd::build_request(key(at::transport::udp, "198.51.100.2", 1, "198.51.100.1", 53), 3, sd::request_kind::dump));
  CHECK(dump.header.nlmsg_flags == (NLM_F_REQUEST | NLM_F_DUMP));
  CHECK(dump.req.sdiag_protocol == IPPROTO_UDP);
  CHECK(dump.req.id.idiag_sport == 0);
  CHECK(decode(sd::build_dump_request(at::transport::udp, true, 4)).req.sdiag_family == AF_INET6);

  at::socket_key mixed;
  mixed.local_address = ip::make_address("198.51.100.2");
  mixed.remote_address = ip::make_address("2001:db8::1");
  CHECK(sd::build_request(mixed, 1, sd::request_kind::exact).empty());
}

TEST_CASE("parse_reply: one answer to an exact lookup") {
  std::vector<std::byte> d;
  append_diag(d, 5, diag_msg("198.51.100.2", 40000, "203.0.113.10", 443, 175309), false);
  const auto r = sd::parse_reply(d, 5);
  REQUIRE(r.has_value());
  CHECK(r->done);
  CHECK(r->error == 0);
  REQUIRE(r->sockets.size() == 1);
  const auto& s = r->sockets[0];
  CHECK_FALSE(s.v6);
  CHECK(s.state == 1);
  CHECK(s.local_address.to_string() == "198.51.100.2");
  CHECK(s.local_port == 40000);
  CHECK(s.remote_address.to_string() == "203.0.113.10");
  CHECK(s.remote_port == 443);
  CHECK(s.uid == 1000);
  CHECK(s.inode == 175309);
}

TEST_CASE("parse_reply: errors and acknowledgements end the answer") {
  std::vector<std::byte> not_found;
  append_error(not_found, 9, -ENOENT);
  auto r = sd::parse_reply(not_found, 9);
  REQUIRE(r.has_value());
  CHECK(r->done);
  CHECK(r->error == ENOENT);
  CHECK(r->sockets.empty());

  std::vector<std::byte> ack;
  append_error(ack, 9, 0);
  r = sd::parse_reply(ack, 9);
  REQUIRE(r.has_value());
  CHECK(r->done);
  CHECK(r->error == 0);

  std::vector<std::byte> weird;
  append_error(weird, 9, std::numeric_limits<int>::min());
  r = sd::parse_reply(weird, 9);
  REQUIRE(r.has_value());
  CHECK(r->error == 0);
}

TEST_CASE("parse_reply: a dump in parts, ended by NLMSG_DONE") {
  std::vector<std::byte> first;
  append_diag(first, 2, diag_msg("0.0.0.0", 53000, "0.0.0.0", 0, 11, 7), true);
  append_diag(first, 2, diag_msg("198.51.100.2", 53001, "198.51.100.1", 53, 12), true);
  auto r = sd::parse_reply(first, 2);
  REQUIRE(r.has_value());
  CHECK_FALSE(r->done);
  REQUIRE(r->sockets.size() == 2);
  CHECK(r->sockets[0].inode == 11);
  CHECK(r->sockets[0].local_address.is_unspecified());
  CHECK(r->sockets[1].inode == 12);

  std::vector<std::byte> last;
  append_diag(last, 2, diag_msg("198.51.100.2", 53002, "0.0.0.0", 0, 13, 7), true);
  int done_payload = 0;
  append_message(last, NLMSG_DONE, NLM_F_MULTI, 2, &done_payload, sizeof done_payload);
  r = sd::parse_reply(last, 2);
  REQUIRE(r.has_value());
  CHECK(r->done);
  CHECK(r->sockets.size() == 1);
}

TEST_CASE("parse_reply: a late answer to an earlier request is skipped") {
  std::vector<std::byte> d;
  append_diag(d, 1, diag_msg("198.51.100.2", 1, "203.0.113.10", 2, 99), false);
  append_error(d, 1, -ENOENT);
  auto r = sd::parse_reply(d, 2);
  REQUIRE(r.has_value());
  CHECK_FALSE(r->done);
  CHECK(r->sockets.empty());

  append_diag(d, 2, diag_msg("198.51.100.2", 3, "203.0.113.10", 4, 100), false);
  r = sd::parse_reply(d, 2);
  REQUIRE(r.has_value());
  CHECK(r->done);
  REQUIRE(r->sockets.size() == 1);
  CHECK(r->sockets[0].inode == 100);
}

TEST_CASE("parse_reply: IPv6 entries and unknown message types") {
  inet_diag_msg m{};
  m.idiag_family = AF_INET6;
  inet_pton(AF_INET6, "::ffff:198.51.100.2", &m.id.idiag_src[0]);
  m.id.idiag_sport = htons(5353);
  m.idiag_inode = 77;
  std::vector<std::byte> d;
  append_message(d, NLMSG_NOOP, 0, 4, nullptr, 0);
  append_message(d, 0x1234, 0, 4, &m, 3);
  append_diag(d, 4, m, false);
  const auto r = sd::parse_reply(d, 4);
  REQUIRE(r.has_value());
  REQUIRE(r->sockets.size() == 1);
  CHECK(r->sockets[0].v6);
  CHECK(at::unmapped(r->sockets[0].local_address).to_string() == "198.51.100.2");
  CHECK(r->sockets[0].inode == 77);
}

TEST_CASE("parse_reply: malformed datagrams are errors") {
  std::vector<std::byte> good;
  append_diag(good, 1, diag_msg("198.51.100.2", 1, "203.0.113.10", 2, 3), false);
  CHECK(sd::parse_reply({}, 1).has_value());  // nothing: not done, not an error

  // Every cut inside the message is an error, never an out-of-bounds read (ASan watches).
  for (std::size_t n = 1; n < good.size(); ++n) {
    INFO("cut at " << n);
    CHECK_FALSE(sd::parse_reply(std::span(good).first(n), 1).has_value());
  }

  auto lying = good;
  nlmsghdr h;
  std::memcpy(&h, lying.data(), sizeof h);
  h.nlmsg_len = 8;  // shorter than its own header
  std::memcpy(lying.data(), &h, sizeof h);
  REQUIRE_FALSE(sd::parse_reply(lying, 1).has_value());
  CHECK(sd::parse_reply(lying, 1).error() == sd::parse_error::bad_length);

  std::vector<std::byte> short_payload;
  append_message(short_payload, SOCK_DIAG_BY_FAMILY, 0, 1, "x", 1);
  CHECK(sd::parse_reply(short_payload, 1).error() == sd::parse_error::truncated);

  std::vector<std::byte> short_error;
  append_message(short_error, NLMSG_ERROR, 0, 1, "xy", 2);
  CHECK(sd::parse_reply(short_error, 1).error() == sd::parse_error::truncated);

  std::vector<std::byte> overrun;
  append_message(overrun, NLMSG_OVERRUN, 0, 1, nullptr, 0);
  CHECK(sd::parse_reply(overrun, 1).error() == sd::parse_error::overrun);
}

TEST_CASE("parse_reply: the last message may lack its alignment padding") {
  std::vector<std::byte> d;
  int payload = 0;
  append_message(d, NLMSG_DONE, NLM_F_MULTI, 6, &payload, 1, false);  // nlmsg_len 17
  const auto r = sd::parse_reply(d, 6);
  REQUIRE(r.has_value());
  CHECK(r->done);
}
