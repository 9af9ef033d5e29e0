#include "dns/wire.hpp"

#include <doctest/doctest.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace wire = airlock::dns::wire;
using wire::parse_error;

namespace {

// --- byte helpers: tests assemble packets by hand so each field is visible ---------------------

std::span<const std::byte> bytes(const std::string& s) { return std::as_bytes(std::span(s)); }

std::string be16(unsigned v) { return {static_cast<char>((v >> 8) & 0xFF), static_cast<char>(v & 0xFF)}; }
std::string be32(std::uint32_t v) { return be16(v >> 16) + be16(v & 0xFFFF); }

std::string from_hex(std::string_view hex) {
  std::string out;
  for (std::size_t i = 0; i + 1 < hex.size(); i += 2) {
    out.push_back(static_cast<char>(std::stoi(std::string(hex.substr(i, 2)), nullptr, 16)));
  }
  return out;
}

// "www.example.com" -> "\3www\7example\3com\0"; "" -> the root.
std::string labels(std::string_view dotted) {
  std::string out;
  while (!dotted.empty()) {
    const auto dot = dotted.find('.');
    const auto label = dotted.substr(0, dot);
    out.push_back(static_cast<char>(label.size()));
    out += label;
    dotted = dot == std::string_view::npos ? std::string_view{} : dotted.substr(dot + 1);
  }
  out.push_back('\0');
  return out;
}

std::string ptr(unsigned offset) { return be16(0xC000 | offset); }

std::string hdr(unsigned id, unsigned flags, unsigned qd, unsigned an, unsigned ns, unsigned ar) {
  return be16(id) + be16(flags) + be16(qd) + be16(an) + be16(ns) + be16(ar);
}

std::string rr(const std::string& owner, unsigned rtype, std::uint32_t ttl, const std::string& rdata,
               unsigned rclass = 1) {
  return owner + be16(rtype) + be16(rclass) + be32(ttl) + be16(static_cast<unsigned>(rdata.size())) + rdata;
}

std::string opt_rr(unsigned udp, std::uint32_t ttl = 0, const std::string& rdata = "") {
  return std::string(1, '\0') + be16(41) + be16(udp) + be32(ttl) + be16(static_cast<unsigned>(rdata.size())) + rdata;
}

std::string a_rdata(int a, int b, int c, int d) {
  return {static_cast<char>(a), static_cast<char>(b), static_cast<char>(c), static_cast<char>(d)};
}

constexpr unsigned query_flags = 0x0100;     // RD
constexpr unsigned response_flags = 0x8180;  // QR RD RA

// A query for `qname_wire` type A class IN with the given header tail.
std::string query_bytes(const std::string& qname_wire, unsigned flags = query_flags, unsigned qd = 1,
                        const std::string& additional = "", unsigned ar = 0) {
  return hdr(0xBEEF, flags, qd, 0, 0, ar) + qname_wire + be16(1) + be16(1) + additional;
}

wire::name name_of(std::string_view text) {
  auto n = wire::name_from_text(text);
  REQUIRE(n.has_value());
  return *n;
}

parse_error query_error(const std::string& pkt) {
  auto r = wire::parse_query(bytes(pkt));
  REQUIRE_FALSE(r.has_value());
  return r.error();
}

parse_error message_error(const std::string& pkt) {
  auto r = wire::parse_message(bytes(pkt));
  REQUIRE_FALSE(r.has_value());
  return r.error();
}

// Packets captured from unbound 1.17.1 serving example.com and example.net auth zones on
// 127.0.0.1 (recursion on, so it chases the CNAME across zones). The query used 0x20 casing.
const std::string unbound_cname_query = from_hex(
    "12340100000100000000000103775777074578416d706c6503436f4d000001000100002904d0000000000000");
const std::string unbound_cname_response = from_hex(
    "12348180000100030000000103775777074578416d706c6503436f4d0000010001c00c000500010000012800110363"
    "646e076578616d706c65036e657400c02d00010001000000380004c0000202c02d00010001000000380004c0000201"
    "00"
    "002904d0000000000000");
const std::string unbound_nxdomain_response = from_hex(
    "456781830001000000010001076e6f7468657265076578616d706c6503636f6d0000010001c014000600010000012c"
    "0027036e7331c0140a686f73746d6173746572c01478a3f17500001c2000000e10001275000000012c00002904d000"
    "0000000000");
const std::string unbound_mx_response = from_hex(
    "234581800001000100000001076578616d706c6503636f6d00000f0001c00c000f00010000003c0009000a046d6169"
    "6cc00c00002904d0000000000000");

}  // namespace

// --- names --------------------------------------------------------------------------------------

TEST_CASE("name_from_text accepts dotted text and keeps the case") {
  struct row {
    std::string_view text;
    std::string wire;
  };
  const std::vector<row> rows{
      {"example.com", labels("example.com")},
      {"example.com.", labels("example.com")},
      {".", labels("")},
      {"wWw.ExAmPlE.cOm", labels("wWw.ExAmPlE.cOm")},
      {"a\\.b.c", std::string("\x03"
                              "a.b"
                              "\x01"
                              "c",
                              6) +
                      '\0'},
      {"\\065bc", labels("Abc")},
      {"a\\\\b", std::string("\x03"
                             "a\\b",
                             4) +
                     '\0'},
      {"\\000\\255", std::string("\x02\x00\xff\x00", 4)},
      {std::string_view("x."), labels("x")},
  };
  for (const auto& r : rows) {
    CAPTURE(r.text);
    auto n = wire::name_from_text(r.text);
    REQUIRE(n.has_value());
    CHECK(n->wire == r.wire);
  }
}

TEST_CASE("name_from_text rejects malformed text") {
  const std::string l63(63, 'a');
  const std::string l61(61, 'b');
  // 3 x 63 + 61 with dots is 253 characters, exactly 255 bytes on the wire.
  const std::string longest = l63 + "." + l63 + "." + l63 + "." + l61;
  REQUIRE(wire::name_from_text(longest).has_value());
  CHECK(wire::name_from_text(longest)->wire.size() == 255);
  CHECK(wire::name_from_text(l63 + ".com").has_value());

  const std::vector<std::string> bad{
      "",    "..",   ".a",    "a..b",   "a.b..", std::string(64, 'a') + ".com", longest + "b",
      "a\\", "a\\2", "a\\25", "a\\256", "\\2x5"};
  for (const auto& text : bad) {
    CAPTURE(text);
    auto n = wire::name_from_text(text);
    REQUIRE_FALSE(n.has_value());
    CHECK(n.error() == parse_error::bad_name);
  }
}

TEST_CASE("to_text escapes in presentation format and round-trips through name_from_text") {
  struct row {
    std::string wire;
    std::string_view text;
  };
  const std::vector<row> rows{
      {labels(""), "."},
      {labels("www.example.com"), "www.example.com"},
      {labels("MiXeD.CaSe"), "MiXeD.CaSe"},
      {std::string("\x03"
                   "a.b"
                   "\x01"
                   "c",
                   6) +
           '\0',
       "a\\.b.c"},
      {std::string("\x03"
                   "a\\b",
                   4) +
           '\0',
       "a\\\\b"},
      {std::string("\x05"
                   "a b\x7f\xff",
                   6) +
           '\0',
       "a\\032b\\127\\255"},
      {std::string("\x01\x00\x00", 3), "\\000"},
      {std::string("\x03~!\x21\x00", 5), "~!!"},
  };
  for (const auto& r : rows) {
    CAPTURE(r.text);
    wire::name n;
    n.wire = r.wire;
    CHECK(n.to_text() == r.text);
    auto back = wire::name_from_text(n.to_text());
    REQUIRE(back.has_value());
    CHECK(*back == n);
  }
  wire::name empty;
  empty.wire.clear();
  CHECK(empty.to_text() == ".");
  CHECK(wire::name{}.to_text() == ".");
}

TEST_CASE("names compare exactly with == and case-insensitively with equals_ignore_case") {
  const auto lower = name_of("www.example.com");
  const auto mixed = name_of("wWw.ExAmPlE.cOm");
  CHECK_FALSE(lower == mixed);
  CHECK(lower.equals_ignore_case(mixed));
  CHECK_FALSE(lower.equals_ignore_case(name_of("www.example.co")));
  CHECK_FALSE(lower.equals_ignore_case(name_of("www.exbmple.com")));
  // Only ASCII letters fold: '[' (0x5b) is not '{' (0x7b).
  CHECK_FALSE(name_of("a[").equals_ignore_case(name_of("a{")));
}

// --- queries ------------------------------------------------------------------------------------

TEST_CASE("parse_query reads a plain query and one built by build_query") {
  auto q = wire::parse_query(bytes(query_bytes(labels("example.com"))));
  REQUIRE(q.has_value());
  CHECK(q->hdr.id == 0xBEEF);
  CHECK(q->hdr.rd());
  CHECK(q->q.qname == name_of("example.com"));
  CHECK(q->q.qtype == wire::type::a);
  CHECK(q->q.qclass == wire::class_in);
  CHECK_FALSE(q->opt.has_value());

  const std::string built = wire::build_query(0x4242, name_of("Example.ORG"), wire::type::aaaa);
  CHECK(built == hdr(0x4242, 0x0100, 1, 0, 0, 1) + labels("Example.ORG") + be16(28) + be16(1) + opt_rr(1232));
  auto back = wire::parse_query(bytes(built));
  REQUIRE(back.has_value());
  CHECK(back->hdr.id == 0x4242);
  CHECK(back->q == wire::question{name_of("Example.ORG"), wire::type::aaaa, wire::class_in});
  REQUIRE(back->opt.has_value());
  CHECK(back->opt->udp_size == 1232);
  CHECK(back->opt->version == 0);
  CHECK_FALSE(back->opt->dnssec_ok);
}

TEST_CASE("parse_query: the unbound-captured 0x20 query keeps the client's case") {
  auto q = wire::parse_query(bytes(unbound_cname_query));
  REQUIRE(q.has_value());
  CHECK(q->q.qname.to_text() == "wWw.ExAmple.CoM");
  CHECK(q->q.qname.equals_ignore_case(name_of("www.example.com")));
  REQUIRE(q->opt.has_value());
  CHECK(q->opt->udp_size == 1232);
}

TEST_CASE("parse_query: compression pointers (ROBUSTNESS C1)") {
  // Backwards into the header is legal: id 0x0161 and flags 0 read as "\x01a\x00".
  auto ok = wire::parse_query(bytes(hdr(0x0161, 0, 1, 0, 0, 0) + ptr(0) + be16(1) + be16(1)));
  REQUIRE(ok.has_value());
  CHECK(ok->q.qname == name_of("a"));

  struct row {
    std::string_view what;
    std::string pkt;
    parse_error expected;
  };
  const std::vector<row> rows{
      {"self pointer", query_bytes(ptr(12)), parse_error::bad_pointer},
      {"forward pointer", query_bytes(ptr(14)) + std::string(8, '\0'), parse_error::bad_pointer},
      {"pointer past end", query_bytes(ptr(0x3FFF)), parse_error::bad_pointer},
      // id 0xC00C is itself a pointer back to the question: 12 -> 0 -> 12.
      {"2-cycle through the header", hdr(0xC00C, 0, 1, 0, 0, 0) + ptr(0) + be16(1) + be16(1), parse_error::bad_pointer},
      {"pointer after a label",
       query_bytes("\x01"
                   "a" +
                   ptr(13)),
       parse_error::bad_pointer},
      {"truncated pointer",
       hdr(1, 0, 1, 0, 0, 0) + "\x03"
                               "abc"
                               "\x03"
                               "def"
                               "\xC0",
       parse_error::bad_pointer},
  };
  for (const auto& r : rows) {
    CAPTURE(r.what);
    CHECK(query_error(r.pkt) == r.expected);
  }
}

TEST_CASE("parse_query: bad labels and names (ROBUSTNESS C2)") {
  const std::string l63 = "\x3f" + std::string(63, 'a');
  struct row {
    std::string_view what;
    std::string pkt;
    parse_error expected;
  };
  const std::vector<row> rows{
      {"label of 64 (type bits 01)", query_bytes("\x40" + std::string(64, 'a') + '\0'), parse_error::bad_name},
      {"label type 0x80",
       query_bytes(std::string("\x80\x01"
                               "a\x00",
                               4)),
       parse_error::bad_name},
      {"name of 257 bytes", query_bytes(l63 + l63 + l63 + l63 + '\0'), parse_error::bad_name},
      {"missing terminator",
       hdr(1, 0, 1, 0, 0, 0) + "\x03"
                               "www"
                               "\x07"
                               "example",
       parse_error::bad_name},
      {"label past end",
       hdr(1, 0, 1, 0, 0, 0) + "\x05"
                               "abcde"
                               "\x3f"
                               "ab",
       parse_error::bad_name},
      {"question without type", hdr(1, 0, 1, 0, 0, 0) + labels("example.com") + "\x00", parse_error::too_short},
  };
  for (const auto& r : rows) {
    CAPTURE(r.what);
    CHECK(query_error(r.pkt) == r.expected);
  }
  // 63-byte labels and a 255-byte name are fine.
  const std::string l61 = "\x3d" + std::string(61, 'b');
  auto longest = wire::parse_query(bytes(query_bytes(l63 + l63 + l63 + l61 + '\0')));
  REQUIRE(longest.has_value());
  CHECK(longest->q.qname.wire.size() == 255);
}

TEST_CASE("65535 counts in a 20-byte packet are rejected before allocating (ROBUSTNESS C3)") {
  struct row {
    int field;  // 0 QD, 1 AN, 2 NS, 3 AR
    parse_error query_expected, message_expected;
  };
  const std::vector<row> rows{
      {0, parse_error::bad_question, parse_error::bad_question},
      {1, parse_error::bad_counts, parse_error::bad_counts},
      {2, parse_error::bad_counts, parse_error::bad_counts},
      {3, parse_error::bad_counts, parse_error::bad_counts},
  };
  for (const auto& r : rows) {
    CAPTURE(r.field);
    unsigned counts[4] = {1, 0, 0, 0};
    counts[r.field] = 0xFFFF;
    const std::string tail = std::string("\x01"
                                         "a\x00",
                                         3) +
                             be16(1) + be16(1) + "x";
    const std::string q = hdr(7, 0, counts[0], counts[1], counts[2], counts[3]) + tail;
    const std::string m = hdr(7, 0x8000, counts[0], counts[1], counts[2], counts[3]) + tail;
    REQUIRE(q.size() == 20);
    CHECK(query_error(q) == r.query_expected);
    CHECK(message_error(m) == r.message_expected);
  }
}

TEST_CASE("parse_query: header checks (ROBUSTNESS C4)") {
  struct row {
    std::string_view what;
    std::string pkt;
    parse_error expected;
  };
  const std::string q = labels("example.com") + be16(1) + be16(1);
  const std::vector<row> rows{
      {"empty", "", parse_error::too_short},
      {"11 bytes", std::string(11, '\0'), parse_error::too_short},
      {"QDCOUNT 0", hdr(1, 0, 0, 0, 0, 0), parse_error::bad_question},
      {"QDCOUNT 2", hdr(1, 0, 2, 0, 0, 0) + q + q, parse_error::bad_question},
      {"QR=1", hdr(1, 0x8000, 1, 0, 0, 0) + q, parse_error::not_a_query},
      {"opcode IQUERY", hdr(1, 1 << 11, 1, 0, 0, 0) + q, parse_error::bad_opcode},
      {"opcode STATUS", hdr(1, 2 << 11, 1, 0, 0, 0) + q, parse_error::bad_opcode},
      {"opcode NOTIFY", hdr(1, 4 << 11, 1, 0, 0, 0) + q, parse_error::bad_opcode},
      {"opcode UPDATE", hdr(1, 5 << 11, 1, 0, 0, 0) + q, parse_error::bad_opcode},
      {"answer in a query", hdr(1, 0, 1, 1, 0, 0) + q + rr(labels(""), 1, 0, "abcd"), parse_error::bad_counts},
      {"authority in a query", hdr(1, 0, 1, 0, 1, 0) + q + rr(labels(""), 1, 0, "abcd"), parse_error::bad_counts},
      {"trailing byte", hdr(1, 0, 1, 0, 0, 0) + q + "x", parse_error::trailing_data},
      {"65536 bytes", hdr(1, 0, 1, 0, 0, 0) + q + std::string(65536 - 12 - q.size(), '\0'), parse_error::too_long},
  };
  for (const auto& r : rows) {
    CAPTURE(r.what);
    CHECK(query_error(r.pkt) == r.expected);
  }
}

TEST_CASE("parse_query reports class and type as sent: CH, ANY are policy, not parse errors") {
  auto q = wire::parse_query(bytes(hdr(1, 0, 1, 0, 0, 0) + labels("version.bind") + be16(255) + be16(3)));
  REQUIRE(q.has_value());
  CHECK(q->q.qtype == wire::type::any);
  CHECK(q->q.qclass == 3);
}

TEST_CASE("parse_header survives what parse_query rejects, for a header-only FORMERR/NOTIMP") {
  const std::string notify = hdr(0x5151, (4 << 11) | 0x0100, 1, 0, 0, 0) + labels("x") + be16(6) + be16(1);
  CHECK(query_error(notify) == parse_error::bad_opcode);
  auto h = wire::parse_header(bytes(notify));
  REQUIRE(h.has_value());
  CHECK(h->id == 0x5151);
  CHECK(h->opcode() == 4);
  CHECK(wire::build_error(*h, wire::rcode::notimp) == hdr(0x5151, 0xA184, 0, 0, 0, 0));
  auto back = wire::parse_header(bytes(wire::build_error(*h, wire::rcode::formerr)));
  REQUIRE(back.has_value());
  CHECK(back->qr());
  CHECK(back->rcode_bits() == 1);
}

TEST_CASE("EDNS oddities (ROBUSTNESS C5)") {
  const std::string base = labels("example.com") + be16(1) + be16(1);
  SUBCASE("version 1 is reported, not rejected") {
    auto q = wire::parse_query(bytes(hdr(1, 0, 1, 0, 0, 1) + base + opt_rr(1232, 0x00018000)));
    REQUIRE(q.has_value());
    REQUIRE(q->opt.has_value());
    CHECK(q->opt->version == 1);
    CHECK(q->opt->dnssec_ok);
    CHECK(q->opt->udp_size == 1232);
  }
  SUBCASE("udp size below 512 is treated as 512") {
    auto q = wire::parse_query(bytes(hdr(1, 0, 1, 0, 0, 1) + base + opt_rr(100)));
    REQUIRE(q.has_value());
    CHECK(q->opt->udp_size == 512);
  }
  SUBCASE("rejected OPT shapes") {
    struct row {
      std::string_view what;
      std::string pkt;
      parse_error expected;
    };
    const std::string cookie = be16(10) + be16(8) + "12345678";
    const std::vector<row> rows{
        {"two OPTs", hdr(1, 0, 1, 0, 0, 2) + base + opt_rr(1232) + opt_rr(1232), parse_error::bad_edns},
        {"OPT owner not root", hdr(1, 0, 1, 0, 0, 1) + base + labels("x") + opt_rr(1232).substr(1),
         parse_error::bad_edns},
        {"option length past RDATA", hdr(1, 0, 1, 0, 0, 1) + base + opt_rr(1232, 0, be16(10) + be16(9) + "12345678"),
         parse_error::bad_edns},
        {"option header cut short", hdr(1, 0, 1, 0, 0, 1) + base + opt_rr(1232, 0, cookie + std::string("\x00\x0a", 2)),
         parse_error::bad_edns},
        {"EDE shorter than its info code", hdr(1, 0, 1, 0, 0, 1) + base + opt_rr(1232, 0, be16(15) + be16(1) + "x"),
         parse_error::bad_edns},
    };
    for (const auto& r : rows) {
      CAPTURE(r.what);
      CHECK(query_error(r.pkt) == r.expected);
    }
    const std::string resp_q = hdr(1, 0x8000, 1, 1, 0, 0) + base;
    CHECK(message_error(resp_q + opt_rr(1232)) == parse_error::bad_edns);  // OPT in answers
    CHECK(message_error(hdr(1, 0x8000, 1, 0, 1, 0) + base + opt_rr(1232)) == parse_error::bad_edns);
    CHECK(message_error(hdr(1, 0x8000, 1, 0, 0, 2) + base + opt_rr(1232) + opt_rr(1232)) == parse_error::bad_edns);
  }
  SUBCASE("well-formed options are validated and dropped, other additional records ignored") {
    const std::string cookie = be16(10) + be16(8) + "12345678";
    const std::string tsig_like = rr(labels("key"), 250, 0, "opaque");
    auto q = wire::parse_query(bytes(hdr(1, 0, 1, 0, 0, 2) + base + opt_rr(4096, 0, cookie) + tsig_like));
    REQUIRE(q.has_value());
    CHECK(q->opt->udp_size == 4096);
    CHECK_FALSE(q->opt->ede.has_value());
  }
}

// --- responses ----------------------------------------------------------------------------------

TEST_CASE("parse_message: a real unbound CNAME chain with compression, re-emitted uncompressed") {
  auto m = wire::parse_message(bytes(unbound_cname_response));
  REQUIRE(m.has_value());
  CHECK(m->hdr.id == 0x1234);
  CHECK(m->hdr.qr());
  CHECK(m->hdr.rd());
  CHECK(m->hdr.ra());
  CHECK(m->hdr.rcode_bits() == 0);
  REQUIRE(m->questions.size() == 1);
  CHECK(m->questions[0].qname.to_text() == "wWw.ExAmple.CoM");
  REQUIRE(m->answers.size() == 3);
  // The owner is a pointer to the question, so it carries the client's case.
  CHECK(m->answers[0].owner.to_text() == "wWw.ExAmple.CoM");
  CHECK(m->answers[0].rtype == wire::type::cname);
  CHECK(m->answers[0].ttl == 296);
  CHECK(m->answers[0].rdata == labels("cdn.example.net"));
  // The A owners point into the CNAME's RDATA (offset 45).
  for (std::size_t i = 1; i < 3; ++i) {
    CHECK(m->answers[i].owner == name_of("cdn.example.net"));
    CHECK(m->answers[i].rtype == wire::type::a);
    CHECK(m->answers[i].ttl == 56);
  }
  CHECK(m->answers[1].rdata == a_rdata(192, 0, 2, 2));
  CHECK(m->answers[2].rdata == a_rdata(192, 0, 2, 1));
  CHECK(m->authority.empty());
  CHECK(m->additional.empty());
  REQUIRE(m->opt.has_value());
  CHECK(m->opt->udp_size == 1232);

  const std::string rebuilt = wire::build(*m);
  const std::string expected = hdr(0x1234, 0x8180, 1, 3, 0, 1) + labels("wWw.ExAmple.CoM") + be16(1) + be16(1) +
                               rr(labels("wWw.ExAmple.CoM"), 5, 296, labels("cdn.example.net")) +
                               rr(labels("cdn.example.net"), 1, 56, a_rdata(192, 0, 2, 2)) +
                               rr(labels("cdn.example.net"), 1, 56, a_rdata(192, 0, 2, 1)) + opt_rr(1232);
  CHECK(rebuilt == expected);
  auto again = wire::parse_message(bytes(rebuilt));
  REQUIRE(again.has_value());
  CHECK(again->answers == m->answers);
  CHECK(again->questions == m->questions);
}

TEST_CASE("parse_message: hand-assembled chain with compressed CNAME target, MX, SRV, SOA") {
  // Question at 12: www.example.com (example.com at 16, com at 24).
  const std::string q = labels("www.example.com") + be16(1) + be16(1);  // ends at 33
  const std::string cname = rr(ptr(12), 5, 300, labels("cdn.example.net"));
  // cname: owner 33-34, fixed 35-44, rdata at 45: "cdn" 45, "example.net" 49, "net" 57.
  const std::string a1 = rr(ptr(45), 1, 60, a_rdata(198, 51, 100, 1));
  const std::string mx = rr(ptr(16), 15, 60,
                            be16(10) +
                                "\x04"
                                "mail" +
                                ptr(16));
  const std::string srv = rr("\x04_sip\x04_tcp" + ptr(16), 33, 60,
                             be16(0) + be16(5) + be16(5060) + "\x03sip" + ptr(49));
  const std::string soa = rr(ptr(16), 6, 60,
                             "\x03ns1" + ptr(16) + "\x0ahostmaster" + ptr(16) + be32(1) + be32(2) + be32(3) + be32(4) +
                                 be32(5));
  const std::string pkt = hdr(9, response_flags, 1, 4, 1, 0) + q + cname + a1 + mx + srv + soa;
  auto m = wire::parse_message(bytes(pkt));
  REQUIRE(m.has_value());
  REQUIRE(m->answers.size() == 4);
  CHECK(m->answers[0].owner == name_of("www.example.com"));
  CHECK(m->answers[0].rdata == labels("cdn.example.net"));
  CHECK(m->answers[1].owner == name_of("cdn.example.net"));
  CHECK(m->answers[2].rdata == be16(10) + labels("mail.example.com"));
  CHECK(m->answers[3].owner == name_of("_sip._tcp.example.com"));
  CHECK(m->answers[3].rdata == be16(0) + be16(5) + be16(5060) + labels("sip.example.net"));
  REQUIRE(m->authority.size() == 1);
  CHECK(m->authority[0].rdata ==
        labels("ns1.example.com") + labels("hostmaster.example.com") + be32(1) + be32(2) + be32(3) + be32(4) + be32(5));
  CHECK_FALSE(m->opt.has_value());

  auto again = wire::parse_message(bytes(wire::build(*m)));
  REQUIRE(again.has_value());
  CHECK(again->answers == m->answers);
  CHECK(again->authority == m->authority);
  CHECK(wire::build(*m).find('\xC0') == std::string::npos);
}

TEST_CASE("parse_message: real unbound NXDOMAIN with a compressed SOA and an MX answer") {
  auto nx = wire::parse_message(bytes(unbound_nxdomain_response));
  REQUIRE(nx.has_value());
  CHECK(nx->hdr.rcode_bits() == 3);
  REQUIRE(nx->authority.size() == 1);
  CHECK(nx->authority[0].owner == name_of("example.com"));
  CHECK(nx->authority[0].rdata.substr(0, 41) == labels("ns1.example.com") + labels("hostmaster.example.com"));
  CHECK(nx->authority[0].rdata.size() == 41 + 20);

  auto mx = wire::parse_message(bytes(unbound_mx_response));
  REQUIRE(mx.has_value());
  REQUIRE(mx->answers.size() == 1);
  CHECK(mx->answers[0].rdata == be16(10) + labels("mail.example.com"));
}

TEST_CASE("parse_message: every strict prefix of a real response fails cleanly") {
  for (std::size_t n = 0; n < unbound_cname_response.size(); ++n) {
    CAPTURE(n);
    CHECK_FALSE(wire::parse_message(bytes(unbound_cname_response.substr(0, n))).has_value());
  }
}

TEST_CASE("parse_message: compression attacks in answers (ROBUSTNESS C1, C2)") {
  const std::string q = labels("a") + be16(1) + be16(1);  // 12..18; first record at 19
  const std::string head1 = hdr(1, response_flags, 1, 1, 0, 0) + q;
  const std::string head2 = hdr(1, response_flags, 1, 2, 0, 0) + q;
  const std::string a = a_rdata(1, 2, 3, 4);

  // A pointer chain: TXT RDATA (at 19 + 2 + 10 = 31) holds a root byte, then pointers, each to the
  // previous entry; a second record's owner points at the last one.
  const auto chain = [&](unsigned pointers) {
    std::string rdata(1, '\0');
    for (unsigned i = 0; i < pointers; ++i) rdata += ptr(i == 0 ? 31 : 31 + 1 + 2 * (i - 1));
    const unsigned last = 31 + 1 + 2 * (pointers - 1);
    return head2 + rr(ptr(12), 16, 0, rdata) + rr(ptr(last), 1, 0, a);
  };
  // chain(n) costs n + 1 jumps (the owner's pointer, then n in the RDATA); the cap is 128.
  auto at_cap = wire::parse_message(bytes(chain(127)));
  REQUIRE(at_cap.has_value());
  CHECK(at_cap->answers[1].owner == wire::name{});
  CHECK(message_error(chain(128)) == parse_error::bad_pointer);

  // 2-cycle: record 1 spans 19..32 and its TXT RDATA (at 31) is a pointer to record 2's owner at
  // 33, which points back to 31.
  const std::string cycle = head2 + rr(ptr(12), 16, 0, ptr(33)) + rr(ptr(31), 1, 0, a);

  const std::string l63 = "\x3f" + std::string(63, 'x');
  const std::string long_q = l63 + l63 + l63 + '\0';  // 193 bytes at 12
  struct row {
    std::string_view what;
    std::string pkt;
    parse_error expected;
  };
  const std::vector<row> rows{
      {"self pointer", head1 + rr(ptr(19), 1, 0, a), parse_error::bad_pointer},
      {"forward pointer", head1 + rr(ptr(21), 1, 0, a), parse_error::bad_pointer},
      {"pointer past end", head1 + rr(ptr(0x3FF0), 1, 0, a), parse_error::bad_pointer},
      {"2-cycle", cycle, parse_error::bad_pointer},
      {"chain of 300 pointers", chain(300), parse_error::bad_pointer},
      {"name > 255 after decompression",
       hdr(1, response_flags, 1, 1, 0, 0) + long_q + be16(1) + be16(1) + rr(l63 + ptr(12), 1, 0, a),
       parse_error::bad_name},
      {"label type 0x40", head1 + rr(std::string("\x41", 1) + std::string(65, 'x') + '\0', 1, 0, a),
       parse_error::bad_name},
      {"label type 0x80", head1 + rr(std::string("\x81x\x00", 3), 1, 0, a), parse_error::bad_name},
      {"pointer in CNAME RDATA past end", head1 + rr(ptr(12), 5, 0, ptr(0x3000)), parse_error::bad_pointer},
      {"self pointer in CNAME RDATA", head1 + rr(ptr(12), 5, 0, ptr(31)), parse_error::bad_pointer},
  };
  for (const auto& r : rows) {
    CAPTURE(r.what);
    CHECK(message_error(r.pkt) == r.expected);
  }
}

TEST_CASE("parse_message: header and record shape errors") {
  const std::string q = labels("a") + be16(1) + be16(1);
  struct row {
    std::string_view what;
    std::string pkt;
    parse_error expected;
  };
  const std::vector<row> rows{
      {"QR=0", hdr(1, 0x0100, 1, 0, 0, 0) + q, parse_error::not_a_response},
      {"opcode 4", hdr(1, 0x8000 | (4 << 11), 1, 0, 0, 0) + q, parse_error::bad_opcode},
      {"QDCOUNT 2", hdr(1, 0x8000, 2, 0, 0, 0) + q + q, parse_error::bad_question},
      {"A with 5 bytes", hdr(1, 0x8000, 1, 1, 0, 0) + q + rr(labels("a"), 1, 0, "12345"), parse_error::bad_record},
      {"AAAA with 4 bytes", hdr(1, 0x8000, 1, 1, 0, 0) + q + rr(labels("a"), 28, 0, "1234"), parse_error::bad_record},
      {"CNAME name shorter than RDATA", hdr(1, 0x8000, 1, 1, 0, 0) + q + rr(labels("a"), 5, 0, labels("b") + "x"),
       parse_error::bad_record},
      {"CNAME name longer than RDATA",
       hdr(1, 0x8000, 1, 1, 0, 0) + q +
           rr(labels("a"), 5, 0,
              "\x03"
              "abc"),
       parse_error::bad_name},
      {"MX without a name", hdr(1, 0x8000, 1, 1, 0, 0) + q + rr(labels("a"), 15, 0, be16(10)), parse_error::bad_name},
      {"SOA without its 20 bytes",
       hdr(1, 0x8000, 1, 1, 0, 0) + q + rr(labels("a"), 6, 0, labels("") + labels("") + "x"), parse_error::bad_record},
      {"RDLENGTH past end", hdr(1, 0x8000, 1, 1, 0, 0) + q + rr(labels("a"), 1, 0, "1234").substr(0, 14),
       parse_error::too_short},
      {"trailing byte", hdr(1, 0x8000, 1, 0, 0, 0) + q + "z", parse_error::trailing_data},
  };
  for (const auto& r : rows) {
    CAPTURE(r.what);
    CHECK(message_error(r.pkt) == r.expected);
  }
  // Class CH A records are not IN addresses; their RDATA is left alone.
  auto ch = wire::parse_message(
      bytes(hdr(1, 0x8000, 1, 1, 0, 0) + q + rr(labels("a"), 1, 0, labels("b") + be16(7), 3)));
  CHECK(ch.has_value());
  // A response with no question (some FORMERR replies) parses.
  CHECK(wire::parse_message(bytes(hdr(1, 0x8001, 0, 0, 0, 0))).has_value());
}

TEST_CASE("parse_message: a TTL with the top bit set reads as 0; unknown types are verbatim") {
  const std::string q = labels("a") + be16(1) + be16(1);
  const std::string svcb_like = be16(1) + std::string("\xC0\x0C", 2);  // not a pointer here
  auto m = wire::parse_message(bytes(hdr(1, 0x8000, 1, 2, 0, 0) + q +
                                     rr(labels("a"), 1, 0x80000001, a_rdata(1, 1, 1, 1)) +
                                     rr(labels("a"), 65, 5, svcb_like)));
  REQUIRE(m.has_value());
  CHECK(m->answers[0].ttl == 0);
  CHECK(m->answers[1].ttl == 5);
  CHECK(m->answers[1].rdata == svcb_like);
}

// --- building -----------------------------------------------------------------------------------

TEST_CASE("build -> parse_message round trip keeps every field") {
  wire::message m;
  m.hdr.id = 0x0A0B;
  m.hdr.flags = wire::flag::qr | wire::flag::aa | wire::flag::rd | 3;
  m.questions.push_back({name_of("Example.com"), wire::type::mx, wire::class_in});
  m.answers.push_back(
      {name_of("example.com"), wire::type::mx, wire::class_in, 3600, be16(5) + labels("mx.example.com")});
  m.authority.push_back({name_of("example.com"), wire::type::ns, wire::class_in, 7, labels("ns.example.net")});
  m.additional.push_back({name_of("mx.example.com"), wire::type::aaaa, wire::class_in, 9, std::string(16, '\x01')});
  m.opt = wire::edns{};
  m.opt->udp_size = 1400;
  m.opt->extended_rcode = 1;
  m.opt->dnssec_ok = true;
  m.opt->ede = wire::extended_error{18, "prohibited"};

  const std::string out = wire::build(m);
  auto back = wire::parse_message(bytes(out));
  REQUIRE(back.has_value());
  CHECK(back->hdr.id == m.hdr.id);
  CHECK(back->hdr.flags == m.hdr.flags);
  CHECK(back->hdr.qdcount == 1);
  CHECK(back->hdr.ancount == 1);
  CHECK(back->hdr.nscount == 1);
  CHECK(back->hdr.arcount == 2);  // the additional AAAA plus the OPT
  CHECK(back->questions == m.questions);
  CHECK(back->answers == m.answers);
  CHECK(back->authority == m.authority);
  CHECK(back->additional == m.additional);
  REQUIRE(back->opt.has_value());
  CHECK(*back->opt == *m.opt);
}

TEST_CASE("build truncates from the end and sets TC when answers are dropped") {
  wire::message m;
  m.hdr.id = 77;
  m.hdr.flags = response_flags;
  const auto owner = name_of("big.example.com");  // 17 bytes
  m.questions.push_back({owner, wire::type::a, wire::class_in});
  for (int i = 0; i < 40; ++i) {
    m.answers.push_back({owner, wire::type::a, wire::class_in, 60, a_rdata(10, 0, 0, i)});
  }
  m.additional.push_back({owner, wire::type::a, wire::class_in, 60, a_rdata(10, 9, 9, 9)});
  m.opt = wire::edns{};

  // 12 header + 21 question + 11 OPT = 44; each answer is 17 + 10 + 4 = 31; 44 + 15 * 31 = 509.
  const std::string out = wire::build(m, 512);
  CHECK(out.size() == 509);
  auto back = wire::parse_message(bytes(out));
  REQUIRE(back.has_value());
  CHECK(back->hdr.tc());
  REQUIRE(back->answers.size() == 15);
  for (std::size_t i = 0; i < 15; ++i) CHECK(back->answers[i] == m.answers[i]);
  CHECK(back->additional.empty());
  CHECK(back->opt.has_value());

  // Without a limit everything is kept and TC stays clear.
  auto full = wire::parse_message(bytes(wire::build(m)));
  REQUIRE(full.has_value());
  CHECK_FALSE(full->hdr.tc());
  CHECK(full->answers.size() == 40);
  CHECK(full->additional.size() == 1);
}

TEST_CASE("build: dropping only additional records does not set TC (RFC 2181 section 9)") {
  wire::message m;
  m.hdr.flags = response_flags;
  const auto owner = name_of("x.example");
  m.questions.push_back({owner, wire::type::a, wire::class_in});
  m.answers.push_back({owner, wire::type::a, wire::class_in, 60, a_rdata(10, 0, 0, 1)});
  for (int i = 0; i < 40; ++i) {
    m.additional.push_back({owner, wire::type::a, wire::class_in, 60, a_rdata(10, 0, 1, i)});
  }
  auto back = wire::parse_message(bytes(wire::build(m, 512)));
  REQUIRE(back.has_value());
  CHECK_FALSE(back->hdr.tc());
  CHECK(back->answers.size() == 1);
  CHECK(back->additional.size() < 40);
  CHECK_FALSE(back->additional.empty());

  // A TC the upstream already set is kept.
  m.hdr.flags |= wire::flag::tc;
  auto kept = wire::parse_message(bytes(wire::build(m)));
  REQUIRE(kept.has_value());
  CHECK(kept->hdr.tc());
}

TEST_CASE("build_error echoes the query, its case and its EDNS") {
  const std::string qname_wire = labels("wWw.ExAmPlE.cOm");
  const std::string question = qname_wire + be16(1) + be16(1);
  SUBCASE("with EDNS and an extended error") {
    // RD, CD; OPT with DO and a 4096 buffer.
    const std::string pkt = hdr(0x0102, 0x0110, 1, 0, 0, 1) + question + opt_rr(4096, 0x8000);
    auto q = wire::parse_query(bytes(pkt));
    REQUIRE(q.has_value());
    const std::string out = wire::build_error(*q, wire::rcode::refused, {{15, "blocked by policy"}});
    const std::string ede = be16(15) + be16(2 + 17) + be16(15) + "blocked by policy";
    CHECK(out == hdr(0x0102, 0x8195, 1, 0, 0, 1) + question + opt_rr(1232, 0x8000, ede));
    auto back = wire::parse_message(bytes(out));
    REQUIRE(back.has_value());
    CHECK(back->hdr.rcode_bits() == 5);
    CHECK(back->questions[0].qname == q->q.qname);
    REQUIRE(back->opt.has_value());
    REQUIRE(back->opt->ede.has_value());
    CHECK(back->opt->ede->info_code == 15);
    CHECK(back->opt->ede->text == "blocked by policy");
    CHECK(back->opt->dnssec_ok);
  }
  SUBCASE("with EDNS, no extended error") {
    auto q = wire::parse_query(bytes(hdr(0x0102, 0x0100, 1, 0, 0, 1) + question + opt_rr(512)));
    REQUIRE(q.has_value());
    CHECK(wire::build_error(*q, wire::rcode::nxdomain) == hdr(0x0102, 0x8183, 1, 0, 0, 1) + question + opt_rr(1232));
  }
  SUBCASE("without EDNS the extended error is not sent") {
    auto q = wire::parse_query(bytes(hdr(0x0102, 0x0000, 1, 0, 0, 0) + question));
    REQUIRE(q.has_value());
    const std::string out = wire::build_error(*q, wire::rcode::servfail, {{23, "network error"}});
    CHECK(out == hdr(0x0102, 0x8082, 1, 0, 0, 0) + question);
    auto back = wire::parse_message(bytes(out));
    REQUIRE(back.has_value());
    CHECK_FALSE(back->opt.has_value());
  }
  SUBCASE("BADVERS goes in the OPT's extended rcode") {
    auto q = wire::parse_query(bytes(hdr(9, 0x0100, 1, 0, 0, 1) + question + opt_rr(1232, 0x00010000)));
    REQUIRE(q.has_value());
    CHECK(q->opt->version == 1);
    CHECK(wire::build_error(*q, wire::rcode::badvers) ==
          hdr(9, 0x8180, 1, 0, 0, 1) + question + opt_rr(1232, 0x01000000));
  }
  SUBCASE("a long extended error text is cut at a UTF-8 boundary to fit 512 bytes") {
    auto q = wire::parse_query(bytes(hdr(1, 0, 1, 0, 0, 1) + question + opt_rr(4096)));
    REQUIRE(q.has_value());
    std::string text;
    for (int i = 0; i < 400; ++i) text += "\xC3\xA9";  // U+00E9, two bytes each
    const std::string out = wire::build_error(*q, wire::rcode::refused, {{15, text}});
    CHECK(out.size() <= 512);
    CHECK(out.size() >= 511);
    auto back = wire::parse_message(bytes(out));
    REQUIRE(back.has_value());
    REQUIRE(back->opt->ede.has_value());
    CHECK(back->opt->ede->text.size() % 2 == 0);
    CHECK(text.starts_with(back->opt->ede->text));
  }
}

TEST_CASE("to_string names every parse_error") {
  CHECK(wire::to_string(parse_error::bad_pointer) == "bad_pointer");
  CHECK(wire::to_string(parse_error::trailing_data) == "trailing_data");
  CHECK(wire::to_string(parse_error::too_long) == "too_long");
}
