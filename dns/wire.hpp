// DNS wire format (RFC 1035, 6891, 8914): sans-I/O parsing and building.
//
// Parsers are pure functions over the bytes of one message. They never throw, never read outside
// the span, and reject anything they cannot re-emit faithfully: names are decompressed on the way
// in (pointers must point strictly backwards), counts are checked against the packet size before
// anything is allocated, and builders always emit names uncompressed. The caller owns sockets,
// framing, buffering and policy (class != IN, ANY, BADVERS answers are decided above this layer).
#pragma once

#include <boost/system/result.hpp>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace airlock::dns::wire {

namespace type {
inline constexpr std::uint16_t a = 1, ns = 2, cname = 5, soa = 6, ptr = 12, mx = 15, txt = 16, aaaa = 28, srv = 33,
                               dname = 39, opt = 41, svcb = 64, https = 65, any = 255;
}  // namespace type

inline constexpr std::uint16_t class_in = 1;

// Header flag bits, for callers that assemble a header by hand.
namespace flag {
inline constexpr std::uint16_t qr = 0x8000, aa = 0x0400, tc = 0x0200, rd = 0x0100, ra = 0x0080, ad = 0x0020,
                               cd = 0x0010;
}  // namespace flag

// EDNS option code of an extended DNS error (RFC 8914).
inline constexpr std::uint16_t option_ede = 15;

// Response codes we emit. Values above 15 need EDNS: the upper bits travel in the OPT record.
enum class rcode : std::uint8_t {
  noerror = 0,
  formerr = 1,
  servfail = 2,
  nxdomain = 3,
  notimp = 4,
  refused = 5,
  badvers = 16,
};

enum class parse_error {
  too_short,       // the packet ends inside the header, a fixed-size field or an RDATA
  bad_name,        // label type 0x40/0x80, label > 63, name > 255, missing terminator
  bad_pointer,     // pointer not strictly backwards, past the end, cut short, or too many jumps
  bad_counts,      // section counts cannot fit in the packet, or AN/NS records in a query
  not_a_query,     // QR=1 where a query was expected
  not_a_response,  // QR=0 where a response was expected
  bad_opcode,      // opcode other than QUERY (0)
  bad_question,    // QDCOUNT != 1 in a query, > 1 in a response
  bad_edns,        // two OPT records, OPT outside additional, OPT owner not root, malformed option
  bad_record,      // RDATA that does not match its type (A != 4 bytes, name not filling RDATA, ...)
  trailing_data,   // bytes left after the last counted record
  too_long,        // more than 65535 bytes: no DNS transport can carry it
};

// Stable lower-case name of `e`, for logs and metrics labels.
std::string_view to_string(parse_error e) noexcept;

// A domain name in uncompressed wire form: length-prefixed labels ending with the root's 0 byte.
// Default-constructed it is the root, so an unset name still serialises to something well formed.
struct name {
  std::string wire = std::string(1, '\0');  // e.g. "\x03www\x07example\x03com\x00"

  // Presentation form: "www.example.com" (no trailing dot), root -> "."; '.', '\\' and bytes
  // outside 0x21..0x7e inside a label become \. \\ \DDD.
  std::string to_text() const;
  // Exact byte equality, so case differences matter (0x20 randomisation is visible).
  bool operator==(const name&) const = default;
  // ASCII case-insensitive equality, as DNS compares names (RFC 4343).
  bool equals_ignore_case(const name& other) const noexcept;
};

struct header {
  std::uint16_t id = 0;
  std::uint16_t flags = 0;
  std::uint16_t qdcount = 0, ancount = 0, nscount = 0, arcount = 0;

  // Accessors for the bits of `flags`.
  bool qr() const noexcept { return (flags & flag::qr) != 0; }
  std::uint8_t opcode() const noexcept { return static_cast<std::uint8_t>((flags >> 11) & 0xF); }
  bool aa() const noexcept { return (flags & flag::aa) != 0; }
  bool tc() const noexcept { return (flags & flag::tc) != 0; }
  bool rd() const noexcept { return (flags & flag::rd) != 0; }
  bool ra() const noexcept { return (flags & flag::ra) != 0; }
  bool ad() const noexcept { return (flags & flag::ad) != 0; }
  bool cd() const noexcept { return (flags & flag::cd) != 0; }
  std::uint8_t rcode_bits() const noexcept { return static_cast<std::uint8_t>(flags & 0xF); }
  bool operator==(const header&) const = default;
};

struct question {
  name qname;
  std::uint16_t qtype = 0;
  std::uint16_t qclass = 0;
  bool operator==(const question&) const = default;
};

// One RFC 8914 extended DNS error; `text` is raw bytes (UTF-8 by the RFC, not checked).
struct extended_error {
  std::uint16_t info_code = 0;
  std::string text;
  bool operator==(const extended_error&) const = default;
};

// The OPT pseudo-record. Other EDNS options are validated and then dropped: EDNS is hop by hop,
// so cookies, padding or NSID from one side must never leak to the other.
struct edns {
  std::uint16_t udp_size = 512;     // values below 512 are raised to 512 on parse (RFC 6891)
  std::uint8_t extended_rcode = 0;  // upper 8 bits of the 12-bit rcode (BADVERS is 1 here)
  std::uint8_t version = 0;         // != 0 is reported, not rejected: the caller answers BADVERS
  bool dnssec_ok = false;
  std::optional<extended_error> ede;  // the first EDE option; parse keeps it so it can be logged
  bool operator==(const edns&) const = default;
};

struct query {
  header hdr;
  question q;
  std::optional<edns> opt;
};

struct record {
  name owner;
  std::uint16_t rtype = 0;
  std::uint16_t rclass = 0;
  std::uint32_t ttl = 0;  // a TTL with the top bit set is read as 0 (RFC 2181 section 8)
  // Names inside the RDATA of the RFC 1035 types (NS CNAME SOA PTR MX MINFO, obsolete MD MF MB MG
  // MR) and of those RFC 3597 section 4 says receivers must decompress (RP AFSDB RT PX NAPTR SRV
  // SIG NXT), plus DNAME, are stored DECOMPRESSED so the record can be re-emitted anywhere. Other
  // types are copied verbatim: they never use compression.
  std::string rdata;
  bool operator==(const record&) const = default;
};

struct message {
  header hdr;  // counts as they were on the wire; build() recomputes them
  std::vector<question> questions;
  std::vector<record> answers, authority, additional;  // the OPT record is kept out of additional
  std::optional<edns> opt;
};

// Parses a client query: QR=0, opcode QUERY, exactly one question, AN=NS=0, at most one OPT in
// additional (other additional records are walked and ignored). Pointers may appear but must point
// strictly backwards, which in a question means into the header.
boost::system::result<query, parse_error> parse_query(std::span<const std::byte> packet) noexcept;

// Parses an upstream response (QR=1, opcode QUERY, at most one question) completely. Counts are
// checked against the packet size before any per-record allocation (a record takes >= 11 bytes).
boost::system::result<message, parse_error> parse_message(std::span<const std::byte> packet) noexcept;

// Reads only the 12-byte header, so a caller can answer FORMERR/NOTIMP to a query that
// parse_query rejected.
boost::system::result<header, parse_error> parse_header(std::span<const std::byte> packet) noexcept;

// Serialises `m` with counts recomputed from the vectors and an OPT appended when m.opt is set.
// If the result would exceed max_size (capped at 65535), records are dropped from the end
// (additional, then authority, then answers) and, when an answer or authority record had to go,
// TC is set (RFC 2181 section 9: missing additional data alone is not truncation). The header,
// questions and OPT are always kept, the EDE being dropped first if even those do not fit.
// Preconditions: names are well formed (as parse or name_from_text make them), rdata <= 65535.
std::string build(const message& m, std::size_t max_size = 65535);

// A minimal reply to `q` with the given rcode: same id, RD and CD copied, QR=1, RA=1, the question
// echoed as the client sent it (its case), OPT echoed (udp 1232, DO copied) when the query had
// one. The optional extended DNS error (info code, UTF-8 text) is only emitted with EDNS; its text
// is cut at a UTF-8 boundary so the reply stays within 512 bytes. badvers without EDNS is sent as
// SERVFAIL, since BADVERS cannot be expressed without an OPT.
std::string build_error(const query& q, rcode rc,
                        std::optional<std::pair<std::uint16_t, std::string>> ede = std::nullopt);

// A header-only reply (no question) for a query too broken to echo: same id and opcode, RD
// copied, QR=1, RA=1; for FORMERR and NOTIMP when parse_query failed but parse_header did not.
std::string build_error(const header& client, rcode rc);

// Builds a recursion-desired query for qname/qtype, class IN, with EDNS (udp 1232) and id as given.
std::string build_query(std::uint16_t id, const name& qname, std::uint16_t qtype);

// Parses presentation text into a name ("example.com", "example.com.", "."), accepting the
// escapes to_text emits (\. \\ \DDD) and rejecting empty labels, labels > 63 and names > 255.
boost::system::result<name, parse_error> name_from_text(std::string_view text) noexcept;

}  // namespace airlock::dns::wire
