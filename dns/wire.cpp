// Parsing of queries and responses: header, questions, resource records, OPT.
#include "dns/wire.hpp"

#include <array>

#include "dns/wire_detail.hpp"

namespace airlock::dns::wire {
namespace {

using detail::byte_at;
using detail::u16_at;
using detail::u32_at;
using error_or_ok = std::optional<parse_error>;

// How to walk an RDATA that may hold compressed names (RFC 3597 section 4).
enum class op : std::uint8_t { fixed, name, char_string, rest };
struct step {
  op kind;
  std::uint8_t size = 0;  // for op::fixed
};
using layout = std::span<const step>;

// Obsolete or rare types whose RDATA still holds names a sender may compress.
namespace rr {
inline constexpr std::uint16_t md = 3, mf = 4, mb = 7, mg = 8, mr = 9, minfo = 14, rp = 17, afsdb = 18, rt = 21,
                               sig = 24, px = 26, nxt = 30, naptr = 35;
}  // namespace rr

constexpr std::array<step, 1> name_layout{{{op::name}}};
constexpr std::array<step, 2> two_names_layout{{{op::name}, {op::name}}};
constexpr std::array<step, 3> soa_layout{{{op::name}, {op::name}, {op::fixed, 20}}};
constexpr std::array<step, 2> preference_layout{{{op::fixed, 2}, {op::name}}};
constexpr std::array<step, 3> px_layout{{{op::fixed, 2}, {op::name}, {op::name}}};
constexpr std::array<step, 2> srv_layout{{{op::fixed, 6}, {op::name}}};
constexpr std::array<step, 5> naptr_layout{
    {{op::fixed, 4}, {op::char_string}, {op::char_string}, {op::char_string}, {op::name}}};
constexpr std::array<step, 3> sig_layout{{{op::fixed, 18}, {op::name}, {op::rest}}};
constexpr std::array<step, 2> nxt_layout{{{op::name}, {op::rest}}};

// The RDATA layout of `rtype` when it may contain compressed names; empty = copy verbatim.
layout layout_of(std::uint16_t rtype) noexcept {
  switch (rtype) {
    case type::ns:
    case type::cname:
    case type::ptr:
    case type::dname:
    case rr::md:
    case rr::mf:
    case rr::mb:
    case rr::mg:
    case rr::mr: return name_layout;
    case type::soa: return soa_layout;
    case rr::minfo:
    case rr::rp: return two_names_layout;
    case type::mx:
    case rr::afsdb:
    case rr::rt: return preference_layout;
    case rr::px: return px_layout;
    case type::srv: return srv_layout;
    case rr::naptr: return naptr_layout;
    case rr::sig: return sig_layout;
    case rr::nxt: return nxt_layout;
    default: return {};
  }
}

// Copies the RDATA at [begin, begin + len) into `out`, decompressing the names its layout names.
error_or_ok read_rdata(std::span<const std::byte> p, std::uint16_t rtype, std::uint16_t rclass, std::size_t begin,
                       std::size_t len, std::string& out) noexcept {
  const std::size_t end = begin + len;
  const layout steps = layout_of(rtype);
  // Only class IN fixes these sizes (CHAOS A, for one, holds a name); the answer filter reads
  // addresses, so a wrong size must not get that far.
  if (rclass == class_in && ((rtype == type::a && len != 4) || (rtype == type::aaaa && len != 16))) {
    return parse_error::bad_record;
  }
  std::size_t pos = begin;
  const auto copy = [&](std::size_t n) {
    detail::append_bytes(out, p, pos, n);
    pos += n;
  };
  if (steps.empty()) {
    copy(len);
    return std::nullopt;
  }
  for (const step& s : steps) {
    switch (s.kind) {
      case op::fixed:
        if (end - pos < s.size) return parse_error::bad_record;
        copy(s.size);
        break;
      case op::char_string:
        if (pos >= end || end - pos - 1 < byte_at(p, pos)) return parse_error::bad_record;
        copy(std::size_t{byte_at(p, pos)} + 1);
        break;
      case op::name:
        if (auto err = detail::read_name(p, pos, end, out)) return err;
        break;
      case op::rest: copy(end - pos); break;
    }
  }
  if (pos != end) return parse_error::bad_record;
  // Decompression can grow an RDATA past what RDLENGTH can express (SIG, NXT carry a tail).
  if (out.size() > detail::max_rdata_size) return parse_error::bad_record;
  return std::nullopt;
}

// A resource record's fixed part, with its RDATA located but not yet copied.
struct raw_record {
  name owner;
  std::uint16_t rtype = 0, rclass = 0;
  std::uint32_t ttl = 0;
  std::size_t rdata_begin = 0, rdata_len = 0;
};

error_or_ok read_record_head(std::span<const std::byte> p, std::size_t& pos, raw_record& out) noexcept {
  out.owner.wire.clear();
  if (auto err = detail::read_name(p, pos, p.size(), out.owner.wire)) return err;
  if (p.size() - pos < 10) return parse_error::too_short;
  out.rtype = u16_at(p, pos);
  out.rclass = u16_at(p, pos + 2);
  out.ttl = u32_at(p, pos + 4);
  out.rdata_len = u16_at(p, pos + 8);
  out.rdata_begin = pos + 10;
  if (p.size() - out.rdata_begin < out.rdata_len) return parse_error::too_short;
  pos = out.rdata_begin + out.rdata_len;
  return std::nullopt;
}

// Validates an OPT record and fills `out`. Options other than the first EDE are dropped.
error_or_ok read_opt(std::span<const std::byte> p, const raw_record& r, edns& out) noexcept {
  if (r.owner.wire.size() != 1) return parse_error::bad_edns;  // owner must be the root
  out.udp_size = r.rclass < 512 ? std::uint16_t{512} : r.rclass;
  out.extended_rcode = static_cast<std::uint8_t>(r.ttl >> 24);
  out.version = static_cast<std::uint8_t>(r.ttl >> 16);
  out.dnssec_ok = (r.ttl & 0x8000) != 0;
  std::size_t pos = r.rdata_begin;
  const std::size_t end = r.rdata_begin + r.rdata_len;
  while (pos < end) {
    if (end - pos < 4) return parse_error::bad_edns;
    const std::uint16_t code = u16_at(p, pos);
    const std::size_t len = u16_at(p, pos + 2);
    pos += 4;
    if (end - pos < len) return parse_error::bad_edns;
    if (code == option_ede) {
      if (len < 2) return parse_error::bad_edns;
      if (!out.ede) {
        extended_error e;
        e.info_code = u16_at(p, pos);
        detail::append_bytes(e.text, p, pos + 2, len - 2);
        out.ede = std::move(e);
      }
    }
    pos += len;
  }
  return std::nullopt;
}

// Reads one question into `out`.
error_or_ok read_question(std::span<const std::byte> p, std::size_t& pos, question& out) noexcept {
  out.qname.wire.clear();
  if (auto err = detail::read_name(p, pos, p.size(), out.qname.wire)) return err;
  if (p.size() - pos < 4) return parse_error::too_short;
  out.qtype = u16_at(p, pos);
  out.qclass = u16_at(p, pos + 2);
  pos += 4;
  return std::nullopt;
}

// True when the minimum encodings of the counted entries cannot fit, which is checked before
// anything is reserved so that 65535 counts in a tiny packet cost nothing (ROBUSTNESS C3).
bool counts_exceed(const header& h, std::size_t size) noexcept {
  const std::size_t need = detail::header_size + detail::min_question_size * h.qdcount +
                           detail::min_record_size * (std::size_t{h.ancount} + h.nscount + h.arcount);
  return need > size;
}

}  // namespace

std::string_view to_string(parse_error e) noexcept {
  switch (e) {
    case parse_error::too_short: return "too_short";
    case parse_error::bad_name: return "bad_name";
    case parse_error::bad_pointer: return "bad_pointer";
    case parse_error::bad_counts: return "bad_counts";
    case parse_error::not_a_query: return "not_a_query";
    case parse_error::not_a_response: return "not_a_response";
    case parse_error::bad_opcode: return "bad_opcode";
    case parse_error::bad_question: return "bad_question";
    case parse_error::bad_edns: return "bad_edns";
    case parse_error::bad_record: return "bad_record";
    case parse_error::trailing_data: return "trailing_data";
    case parse_error::too_long: return "too_long";
  }
  return "unknown";
}

boost::system::result<header, parse_error> parse_header(std::span<const std::byte> packet) noexcept {
  if (packet.size() > detail::max_message_size) return parse_error::too_long;
  if (packet.size() < detail::header_size) return parse_error::too_short;
  header h;
  h.id = u16_at(packet, 0);
  h.flags = u16_at(packet, 2);
  h.qdcount = u16_at(packet, 4);
  h.ancount = u16_at(packet, 6);
  h.nscount = u16_at(packet, 8);
  h.arcount = u16_at(packet, 10);
  return h;
}

boost::system::result<query, parse_error> parse_query(std::span<const std::byte> packet) noexcept {
  auto h = parse_header(packet);
  if (!h.has_value()) return h.error();
  query q;
  q.hdr = *h;
  if (q.hdr.qr()) return parse_error::not_a_query;
  if (q.hdr.opcode() != 0) return parse_error::bad_opcode;
  if (q.hdr.qdcount != 1) return parse_error::bad_question;
  if (q.hdr.ancount != 0 || q.hdr.nscount != 0) return parse_error::bad_counts;
  if (counts_exceed(q.hdr, packet.size())) return parse_error::bad_counts;

  std::size_t pos = detail::header_size;
  if (auto err = read_question(packet, pos, q.q)) return *err;
  raw_record r;
  for (std::uint16_t i = 0; i < q.hdr.arcount; ++i) {
    if (auto err = read_record_head(packet, pos, r)) return *err;
    if (r.rtype != type::opt) continue;  // e.g. TSIG: walked so the framing is checked, not used
    if (q.opt) return parse_error::bad_edns;
    if (auto err = read_opt(packet, r, q.opt.emplace())) return *err;
  }
  if (pos != packet.size()) return parse_error::trailing_data;
  return q;
}

boost::system::result<message, parse_error> parse_message(std::span<const std::byte> packet) noexcept {
  auto h = parse_header(packet);
  if (!h.has_value()) return h.error();
  message m;
  m.hdr = *h;
  if (!m.hdr.qr()) return parse_error::not_a_response;
  if (m.hdr.opcode() != 0) return parse_error::bad_opcode;
  // We only ever ask one question; 0 is legal in some error replies.
  if (m.hdr.qdcount > 1) return parse_error::bad_question;
  if (counts_exceed(m.hdr, packet.size())) return parse_error::bad_counts;

  std::size_t pos = detail::header_size;
  if (m.hdr.qdcount == 1) {
    if (auto err = read_question(packet, pos, m.questions.emplace_back())) return *err;
  }
  m.answers.reserve(m.hdr.ancount);
  m.authority.reserve(m.hdr.nscount);
  m.additional.reserve(m.hdr.arcount);
  const std::array<std::pair<std::vector<record>*, std::uint16_t>, 3> sections{
      {{&m.answers, m.hdr.ancount}, {&m.authority, m.hdr.nscount}, {&m.additional, m.hdr.arcount}}};
  raw_record r;
  for (const auto& [out, count] : sections) {
    for (std::uint16_t i = 0; i < count; ++i) {
      if (auto err = read_record_head(packet, pos, r)) return *err;
      if (r.rtype == type::opt) {
        if (out != &m.additional || m.opt) return parse_error::bad_edns;
        if (auto err = read_opt(packet, r, m.opt.emplace())) return *err;
        continue;
      }
      record& rec = out->emplace_back();
      rec.owner = std::move(r.owner);
      rec.rtype = r.rtype;
      rec.rclass = r.rclass;
      rec.ttl = (r.ttl & 0x80000000U) != 0 ? 0 : r.ttl;
      if (auto err = read_rdata(packet, r.rtype, r.rclass, r.rdata_begin, r.rdata_len, rec.rdata)) {
        return *err;
      }
    }
  }
  if (pos != packet.size()) return parse_error::trailing_data;
  return m;
}

}  // namespace airlock::dns::wire
