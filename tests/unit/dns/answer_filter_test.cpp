#include "dns/answer_filter.hpp"

#include "dns/wire.hpp"

#include <doctest/doctest.h>

#include <boost/asio/ip/address.hpp>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace wire = airlock::dns::wire;
using airlock::dns::filter_answer;
using airlock::dns::filter_outcome;
using airlock::dns::filter_settings;
using boost::asio::ip::address;
using boost::asio::ip::make_address;

namespace {

// --- helpers: records are assembled from wire types so each field is visible -------------------

std::string be16(unsigned v) { return {static_cast<char>((v >> 8) & 0xFF), static_cast<char>(v & 0xFF)}; }

std::string from_hex(std::string_view hex) {
  std::string out;
  for (std::size_t i = 0; i + 1 < hex.size(); i += 2) {
    out.push_back(static_cast<char>(std::stoi(std::string(hex.substr(i, 2)), nullptr, 16)));
  }
  return out;
}

wire::name name_of(std::string_view text) {
  auto n = wire::name_from_text(text);
  REQUIRE(n.has_value());
  return *n;
}

wire::record rr(std::string_view owner, std::uint16_t rtype, std::string rdata, std::uint16_t rclass = wire::class_in) {
  return wire::record{name_of(owner), rtype, rclass, 300, std::move(rdata)};
}

wire::record cname(std::string_view owner, std::string_view target) {
  return rr(owner, wire::type::cname, name_of(target).wire);
}

std::string address_bytes(std::string_view text) {
  const auto a = make_address(text);
  if (a.is_v4()) {
    const auto b = a.to_v4().to_bytes();
    return {reinterpret_cast<const char*>(b.data()), b.size()};
  }
  const auto b = a.to_v6().to_bytes();
  return {reinterpret_cast<const char*>(b.data()), b.size()};
}

wire::record a(std::string_view owner, std::string_view text) { return rr(owner, wire::type::a, address_bytes(text)); }
wire::record aaaa(std::string_view owner, std::string_view text) {
  return rr(owner, wire::type::aaaa, address_bytes(text));
}

// One SvcParam: key, length, value.
std::string param(unsigned key, const std::string& value) {
  return be16(key) + be16(static_cast<unsigned>(value.size())) + value;
}

// SvcPriority, TargetName, then the params as given (callers choose the order on purpose).
std::string svcb_rdata(unsigned priority, std::string_view target, const std::string& params = "") {
  return be16(priority) + name_of(target).wire + params;
}

const std::string alpn_h3_h2 = std::string("\x02h3\x02h2", 6);
const std::string port_443 = be16(443);
const std::string ipv4_hint = address_bytes("192.0.2.7");
const std::string ipv6_hint = address_bytes("2001:db8::7");
const std::string ech_config = from_hex("0045fe0d0041");  // the start of an ECHConfigList

const auto no_special = [](const address&) { return false; };

std::vector<std::string> texts(const std::vector<address>& addresses) {
  std::vector<std::string> out;
  for (const auto& x : addresses) out.push_back(x.to_string());
  return out;
}

std::vector<std::string> texts(const std::vector<wire::name>& names) {
  std::vector<std::string> out;
  for (const auto& n : names) out.push_back(n.to_text());
  return out;
}

void check_counts(const filter_outcome& o, std::size_t special, std::size_t out_of_chain, std::size_t aaaa,
                  std::size_t rewritten, std::size_t malformed, std::size_t other) {
  CHECK(o.removed_special == special);
  CHECK(o.removed_out_of_chain == out_of_chain);
  CHECK(o.removed_aaaa == aaaa);
  CHECK(o.svcb_rewritten == rewritten);
  CHECK(o.removed_malformed == malformed);
  CHECK(o.removed_other == other);
  CHECK(o.removed() == special + out_of_chain + aaaa + malformed + other);
}

filter_outcome run(wire::message& m, std::string_view qname, filter_settings settings = {}) {
  return filter_answer(m, name_of(qname), settings, no_special);
}

// Captured from unbound 1.17.1 (same packet as wire_test.cpp): wWw.ExAmple.CoM CNAME
// cdn.example.net, then two A records for cdn.example.net (192.0.2.2, 192.0.2.1), with an OPT.
const std::string unbound_cname_response = from_hex(
    "12348180000100030000000103775777074578416d706c6503436f4d0000010001c00c000500010000012800110363"
    "646e076578616d706c65036e657400c02d00010001000000380004c0000202c02d00010001000000380004c0000201"
    "00"
    "002904d0000000000000");

}  // namespace

// --- the CNAME chain ----------------------------------------------------------------------------

TEST_CASE("a real unbound answer: CNAME to a CDN name and its A records are kept") {
  auto parsed = wire::parse_message(std::as_bytes(std::span(unbound_cname_response)));
  REQUIRE(parsed.has_value());
  wire::message m = *parsed;
  const auto o = filter_answer(m, m.questions.at(0).qname, {}, no_special);
  check_counts(o, 0, 0, 0, 0, 0, 0);
  CHECK(texts(o.chain) == std::vector<std::string>{"wWw.ExAmple.CoM", "cdn.example.net"});
  CHECK(texts(o.addresses) == std::vector<std::string>{"192.0.2.2", "192.0.2.1"});
  CHECK(m.answers == parsed->answers);
  CHECK(m.opt == parsed->opt);
}

TEST_CASE("chain: CNAME to a CDN name, A records at the end; names compare without case") {
  wire::message m;
  m.answers = {cname("www.example.com", "Edge.Example-CDN.net"), a("edge.example-cdn.NET", "93.184.216.34"),
               a("EDGE.example-cdn.net", "93.184.216.35")};
  const auto before = m.answers;
  const auto o = run(m, "WWW.example.com");
  check_counts(o, 0, 0, 0, 0, 0, 0);
  CHECK(texts(o.chain) == std::vector<std::string>{"WWW.example.com", "Edge.Example-CDN.net"});
  CHECK(texts(o.addresses) == std::vector<std::string>{"93.184.216.34", "93.184.216.35"});
  CHECK(m.answers == before);
}

TEST_CASE("records under an unrelated owner are removed") {
  wire::message m;
  m.answers = {a("www.example.com", "93.184.216.34"), a("bank.example.net", "198.51.100.1"),
               cname("other.example.org", "www.example.com"), rr("evil.test", wire::type::txt, "\x02hi")};
  const auto o = run(m, "www.example.com");
  check_counts(o, 0, 3, 0, 0, 0, 0);
  CHECK(texts(o.chain) == std::vector<std::string>{"www.example.com"});
  CHECK(texts(o.addresses) == std::vector<std::string>{"93.184.216.34"});
  REQUIRE(m.answers.size() == 1);
  CHECK(m.answers[0].owner.to_text() == "www.example.com");
}

TEST_CASE("CNAMEs after the records they lead to are followed (any order)") {
  wire::message m;
  m.answers = {a("c.example.net", "93.184.216.34"), cname("b.example.org", "c.example.net"),
               rr("b.example.org", wire::type::txt, "\x01x"), cname("a.example.com", "b.example.org")};
  const auto before = m.answers;
  const auto o = run(m, "a.example.com");
  check_counts(o, 0, 0, 0, 0, 0, 0);
  CHECK(texts(o.chain) == std::vector<std::string>{"a.example.com", "b.example.org", "c.example.net"});
  CHECK(texts(o.addresses) == std::vector<std::string>{"93.184.216.34"});
  CHECK(m.answers == before);
}

TEST_CASE("a 17-link chain is cut at 16 names; what hangs past the cut is removed") {
  wire::message m;
  auto n = [](int i) { return "n" + std::to_string(i) + ".example.com"; };
  for (int i = 0; i < 17; ++i) m.answers.push_back(cname(n(i), n(i + 1)));
  m.answers.push_back(a(n(17), "93.184.216.34"));
  const auto o = run(m, n(0));
  // Kept: 15 links (n0 -> ... -> n15). Removed: n15 -> n16, n16 -> n17 and the A at n17.
  check_counts(o, 0, 3, 0, 0, 0, 0);
  REQUIRE(o.chain.size() == airlock::dns::max_chain_names);
  CHECK(o.chain.back().to_text() == n(15));
  CHECK(o.addresses.empty());
  REQUIRE(m.answers.size() == 15);
  CHECK(m.answers.back().owner.to_text() == n(14));
}

TEST_CASE("a CNAME loop, a second CNAME at one name and a bad CNAME target are removed") {
  wire::message m;
  m.answers = {cname("a.example.com", "b.example.com"), cname("a.example.com", "x.example.com"),
               cname("b.example.com", "A.example.com"), rr("b.example.com", wire::type::cname, "\x05short"),
               a("b.example.com", "93.184.216.34"),     a("x.example.com", "93.184.216.99")};
  const auto o = run(m, "a.example.com");
  // Out of chain: a -> x (second CNAME), b -> a (loop), the A at x. Malformed: the cut-off target.
  check_counts(o, 0, 3, 0, 0, 1, 0);
  CHECK(texts(o.chain) == std::vector<std::string>{"a.example.com", "b.example.com"});
  CHECK(texts(o.addresses) == std::vector<std::string>{"93.184.216.34"});
  CHECK(m.answers.size() == 2);
}

TEST_CASE("DNAME and non-IN records are removed; the synthesised CNAME is followed") {
  wire::message m;
  m.answers = {rr("example.com", wire::type::dname, name_of("example.net").wire),
               cname("www.example.com", "www.example.net"), a("www.example.net", "93.184.216.34"),
               rr("www.example.net", wire::type::a, address_bytes("93.184.216.35"), 3)};  // class CH
  const auto o = run(m, "www.example.com");
  check_counts(o, 0, 0, 0, 0, 0, 2);
  CHECK(texts(o.chain) == std::vector<std::string>{"www.example.com", "www.example.net"});
  CHECK(texts(o.addresses) == std::vector<std::string>{"93.184.216.34"});
  CHECK(m.answers.size() == 2);
}

// --- addresses ----------------------------------------------------------------------------------

TEST_CASE("special addresses are removed unless allow_special says yes") {
  auto make = [] {
    wire::message m;
    m.answers = {a("h.example.com", "127.0.0.1"),
                 a("h.example.com", "10.1.2.3"),
                 a("h.example.com", "169.254.169.254"),
                 aaaa("h.example.com", "::ffff:127.0.0.1"),
                 aaaa("h.example.com", "64:ff9b::a9fe:a9fe"),
                 a("h.example.com", "93.184.216.34"),
                 aaaa("h.example.com", "2606:2800:220:1::1"),
                 rr("h.example.com", wire::type::a, "\x01\x02\x03")};
    return m;
  };
  SUBCASE("none allowed") {
    auto m = make();
    const auto o = run(m, "h.example.com");
    check_counts(o, 5, 0, 0, 0, 1, 0);
    CHECK(texts(o.addresses) == std::vector<std::string>{"93.184.216.34", "2606:2800:220:1::1"});
    CHECK(m.answers.size() == 2);
  }
  SUBCASE("an empty allow_special allows none") {
    auto m = make();
    const auto o = filter_answer(m, name_of("h.example.com"), {}, {});
    check_counts(o, 5, 0, 0, 0, 1, 0);
    CHECK(o.addresses.size() == 2);
  }
  SUBCASE("a cidr rule for 10/8 lets 10.1.2.3 through; it is asked about special addresses only") {
    auto m = make();
    std::vector<std::string> asked;
    const auto o = filter_answer(m, name_of("h.example.com"), {}, [&](const address& x) {
      asked.push_back(x.to_string());
      return x.is_v4() && (x.to_v4().to_uint() >> 24) == 10;
    });
    check_counts(o, 4, 0, 0, 0, 1, 0);
    CHECK(asked.size() == 5);
    CHECK(texts(o.addresses) == std::vector<std::string>{"10.1.2.3", "93.184.216.34", "2606:2800:220:1::1"});
    CHECK(m.answers.size() == 3);
  }
}

TEST_CASE("AAAA records are removed when the sandbox has no IPv6 path") {
  wire::message m;
  m.answers = {aaaa("h.example.com", "2606:2800:220:1::1"), a("h.example.com", "93.184.216.34"),
               aaaa("h.example.com", "::1")};
  filter_settings s;
  s.ipv6 = false;
  const auto o = run(m, "h.example.com", s);
  check_counts(o, 0, 0, 2, 0, 0, 0);
  CHECK(texts(o.addresses) == std::vector<std::string>{"93.184.216.34"});
  REQUIRE(m.answers.size() == 1);
  CHECK(m.answers[0].rtype == wire::type::a);
}

// --- HTTPS / SVCB -------------------------------------------------------------------------------

TEST_CASE("HTTPS: h3, ech and hints go, alpn h2 and port stay (exact bytes)") {
  const std::string full = svcb_rdata(1, ".",
                                      param(1, alpn_h3_h2) + param(3, port_443) + param(4, ipv4_hint) +
                                          param(5, ech_config) + param(6, ipv6_hint));
  SUBCASE("QUIC blocked") {
    wire::message m;
    m.answers = {rr("h.example.com", wire::type::https, full)};
    const auto o = run(m, "h.example.com");
    check_counts(o, 0, 0, 0, 1, 0, 0);
    REQUIRE(m.answers.size() == 1);
    CHECK(m.answers[0].rdata == std::string("\x00\x01\x00"
                                            "\x00\x01\x00\x03\x02h2"
                                            "\x00\x03\x00\x02\x01\xbb",
                                            16));
  }
  SUBCASE("QUIC allowed: alpn untouched") {
    wire::message m;
    m.answers = {rr("h.example.com", wire::type::https, full)};
    filter_settings s;
    s.quic_blocked = false;
    const auto o = run(m, "h.example.com", s);
    check_counts(o, 0, 0, 0, 1, 0, 0);
    REQUIRE(m.answers.size() == 1);
    CHECK(m.answers[0].rdata == svcb_rdata(1, ".", param(1, alpn_h3_h2) + param(3, port_443)));
  }
}

TEST_CASE("HTTPS: alpn of h3 ids only takes alpn and no-default-alpn with it") {
  wire::message m;
  m.answers = {rr("h.example.com", wire::type::https,
                  svcb_rdata(1, "svc.example.net",
                             param(1, std::string("\x02h3\x05h3-29", 9)) + param(2, "") + param(3, port_443)))};
  const auto o = run(m, "h.example.com");
  check_counts(o, 0, 0, 0, 1, 0, 0);
  REQUIRE(m.answers.size() == 1);
  CHECK(m.answers[0].rdata == svcb_rdata(1, "svc.example.net", param(3, port_443)));
}

TEST_CASE("HTTPS/SVCB that need no change are not counted; AliasMode is kept") {
  wire::message m;
  m.answers = {rr("h.example.com", wire::type::https, svcb_rdata(0, "cdn.example.net")),
               rr("h.example.com", wire::type::https, svcb_rdata(1, ".", param(1, "\x02h2") + param(3, port_443))),
               rr("h.example.com", wire::type::svcb, svcb_rdata(2, "x.example.net", param(65001, "opaque")))};
  const auto before = m.answers;
  const auto o = run(m, "h.example.com");
  check_counts(o, 0, 0, 0, 0, 0, 0);
  CHECK(m.answers == before);
}

TEST_CASE("AliasMode with params: the params are dropped (clients must ignore them anyway)") {
  wire::message m;
  m.answers = {rr("h.example.com", wire::type::https, svcb_rdata(0, "cdn.example.net", param(4, ipv4_hint))),
               rr("h.example.com", wire::type::https, svcb_rdata(0, "cdn.example.net", param(3, port_443) + "junk"))};
  const auto o = run(m, "h.example.com");
  check_counts(o, 0, 0, 0, 2, 0, 0);
  REQUIRE(m.answers.size() == 2);
  CHECK(m.answers[0].rdata == svcb_rdata(0, "cdn.example.net"));
  CHECK(m.answers[1].rdata == svcb_rdata(0, "cdn.example.net"));
}

TEST_CASE("SVCB (type 64) is filtered like HTTPS") {
  wire::message m;
  m.answers = {rr("_dns.h.example.com", wire::type::svcb,
                  svcb_rdata(1, "dns.example.net",
                             param(1, "\x03"
                                      "dot") +
                                 param(5, ech_config)))};
  const auto o = run(m, "_dns.h.example.com");
  check_counts(o, 0, 0, 0, 1, 0, 0);
  REQUIRE(m.answers.size() == 1);
  CHECK(m.answers[0].rdata == svcb_rdata(1, "dns.example.net",
                                         param(1, "\x03"
                                                  "dot")));
}

TEST_CASE("malformed HTTPS/SVCB records are removed whole") {
  const std::string p3 = param(3, port_443);
  const std::vector<std::string> bad = {
      svcb_rdata(1, ".", p3 + be16(4) + be16(8) + std::string("\xc0\x00\x02\x07", 4)),  // length overruns rdata
      svcb_rdata(1, ".", p3 + p3),                                                      // duplicate key
      svcb_rdata(1, ".", p3 + param(1, "\x02h2")),                                      // decreasing keys
      svcb_rdata(1, ".", p3 + std::string("\x00\x05\x00", 3)),                          // param header cut short
      svcb_rdata(1, ".", param(1, std::string("\x00\x02h2", 4))),                       // empty alpn id
      svcb_rdata(1, ".", param(1, "\x05h2")),                                           // alpn id overruns value
      svcb_rdata(1, ".", param(1, "")),                                                 // alpn with no ids
      svcb_rdata(1, ".", param(1, "\x02h2") + param(2, "x")),                           // no-default-alpn value
      svcb_rdata(1, ".", param(0, be16(3) + be16(3)) + p3),                             // mandatory not increasing
      svcb_rdata(1, ".", param(0, be16(0)) + p3),                                       // mandatory lists itself
      svcb_rdata(1, ".", param(0, "") + p3),                                            // mandatory lists nothing
      be16(1) + "\x03"
                "abc",         // target name not ended
      std::string("\x00", 1),  // no room for priority
  };
  wire::message m;
  for (const auto& rdata : bad) m.answers.push_back(rr("h.example.com", wire::type::https, rdata));
  m.answers.push_back(a("h.example.com", "93.184.216.34"));
  const auto o = run(m, "h.example.com");
  check_counts(o, 0, 0, 0, 0, bad.size(), 0);
  REQUIRE(m.answers.size() == 1);
  CHECK(m.answers[0].rtype == wire::type::a);
}

TEST_CASE("a record whose mandatory key the rewrite removed goes; other mandatory keys are fine") {
  wire::message m;
  m.answers = {rr("h.example.com", wire::type::https, svcb_rdata(1, ".", param(0, be16(5)) + param(5, ech_config))),
               rr("h.example.com", wire::type::https, svcb_rdata(2, ".", param(0, be16(1)) + param(1, "\x02h3"))),
               rr("h.example.com", wire::type::https,
                  svcb_rdata(3, ".", param(0, be16(3)) + param(3, port_443) + param(5, ech_config)))};
  const auto o = run(m, "h.example.com");
  check_counts(o, 0, 0, 0, 1, 2, 0);
  REQUIRE(m.answers.size() == 1);
  CHECK(m.answers[0].rdata == svcb_rdata(3, ".", param(0, be16(3)) + param(3, port_443)));
}

TEST_CASE("HTTPS records out of the chain are removed, not rewritten") {
  wire::message m;
  m.answers = {rr("other.example.com", wire::type::https, svcb_rdata(1, ".", param(5, ech_config)))};
  const auto o = run(m, "h.example.com");
  check_counts(o, 0, 1, 0, 0, 0, 0);
  CHECK(m.answers.empty());
}

// --- authority and additional -------------------------------------------------------------------

TEST_CASE("authority keeps only SOA; additional is cleared; OPT is left alone; output still builds") {
  wire::message m;
  m.hdr.flags = 0x8180;
  m.questions = {wire::question{name_of("h.example.com"), wire::type::a, wire::class_in}};
  m.answers = {a("h.example.com", "93.184.216.34")};
  const auto soa = rr("example.com", wire::type::soa,
                      name_of("ns1.example.com").wire + name_of("hostmaster.example.com").wire +
                          std::string(20, '\x01'));
  m.authority = {rr("example.com", wire::type::ns, name_of("ns1.example.com").wire), soa,
                 rr("example.com", wire::type::soa, soa.rdata, 3)};
  m.additional = {a("ns1.example.com", "10.0.0.53"), aaaa("ns1.example.com", "fd00::53")};
  m.opt = wire::edns{};
  const auto o = run(m, "h.example.com");
  check_counts(o, 0, 0, 0, 0, 0, 0);
  REQUIRE(m.authority.size() == 1);
  CHECK(m.authority[0] == soa);
  CHECK(m.additional.empty());
  CHECK(m.opt.has_value());

  const std::string packet = wire::build(m);
  auto again = wire::parse_message(std::as_bytes(std::span(packet)));
  REQUIRE(again.has_value());
  CHECK(again->answers == m.answers);
  CHECK(again->authority == m.authority);
  CHECK(again->additional.empty());
}

TEST_CASE("a filtered HTTPS answer survives build and parse") {
  wire::message m;
  m.hdr.flags = 0x8180;
  m.questions = {wire::question{name_of("h.example.com"), wire::type::https, wire::class_in}};
  m.answers = {cname("h.example.com", "h.cdn.example.net"),
               rr("h.cdn.example.net", wire::type::https,
                  svcb_rdata(1, ".", param(1, alpn_h3_h2) + param(4, ipv4_hint) + param(5, ech_config)))};
  const auto o = run(m, "h.example.com");
  check_counts(o, 0, 0, 0, 1, 0, 0);
  const std::string packet = wire::build(m);
  auto again = wire::parse_message(std::as_bytes(std::span(packet)));
  REQUIRE(again.has_value());
  CHECK(again->answers == m.answers);
  CHECK(again->answers.at(1).rdata == svcb_rdata(1, ".", param(1, "\x02h2")));
}
