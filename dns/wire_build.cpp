// Building messages: always uncompressed, counts from the vectors, truncation from the end.
#include <algorithm>
#include <array>

#include "dns/wire.hpp"
#include "dns/wire_detail.hpp"

namespace airlock::dns::wire {
namespace {

using detail::put_u16;
using detail::put_u32;

// The EDNS size we advertise: avoids IP fragmentation on common paths (DNS flag day 2020).
constexpr std::uint16_t our_udp_size = 1232;
// Error replies stay within the one size every client accepts over UDP.
constexpr std::size_t error_reply_limit = 512;
constexpr std::size_t opt_fixed_size = 11;
constexpr std::size_t ede_fixed_size = 6;  // option code, length, info code

void put_name(std::string& out, const name& n) {
  // An empty wire is not a name; emit the root rather than a malformed record.
  if (n.wire.empty()) {
    out.push_back('\0');
  } else {
    out += n.wire;
  }
}

std::size_t name_size(const name& n) noexcept { return n.wire.empty() ? 1 : n.wire.size(); }

std::size_t record_size(const record& r) noexcept { return name_size(r.owner) + 10 + r.rdata.size(); }

std::size_t opt_size(const edns& e, bool with_ede) noexcept {
  return opt_fixed_size + (with_ede && e.ede ? ede_fixed_size + e.ede->text.size() : 0);
}

void put_opt(std::string& out, const edns& e, bool with_ede) {
  out.push_back('\0');  // owner: root
  put_u16(out, type::opt);
  put_u16(out, e.udp_size);
  put_u32(out,
          (std::uint32_t{e.extended_rcode} << 24) | (std::uint32_t{e.version} << 16) | (e.dnssec_ok ? 0x8000U : 0U));
  if (!with_ede || !e.ede) {
    put_u16(out, 0);
    return;
  }
  const auto option_len = static_cast<std::uint16_t>(2 + e.ede->text.size());
  put_u16(out, static_cast<std::uint16_t>(4 + option_len));
  put_u16(out, option_ede);
  put_u16(out, option_len);
  put_u16(out, e.ede->info_code);
  out += e.ede->text;
}

void put_record(std::string& out, const record& r) {
  put_name(out, r.owner);
  put_u16(out, r.rtype);
  put_u16(out, r.rclass);
  put_u32(out, r.ttl);
  put_u16(out, static_cast<std::uint16_t>(r.rdata.size()));
  out += r.rdata;
}

}  // namespace

std::string build(const message& m, std::size_t max_size) {
  const std::size_t limit = std::min(max_size, detail::max_message_size);
  // QDCOUNT is 16 bits; a parsed message never has more than one question anyway.
  const std::size_t qcount = std::min<std::size_t>(m.questions.size(), 0xFFFF);

  std::size_t fixed = detail::header_size;
  for (std::size_t i = 0; i < qcount; ++i) fixed += name_size(m.questions[i].qname) + 4;
  // The EDE is advisory: it goes first when it cannot be carried or does not fit.
  bool with_ede = m.opt && m.opt->ede && m.opt->ede->text.size() <= detail::max_rdata_size - ede_fixed_size;
  if (m.opt && with_ede && fixed + opt_size(*m.opt, true) > limit) with_ede = false;
  if (m.opt) fixed += opt_size(*m.opt, with_ede);

  // Keep the longest prefix of answers ++ authority ++ additional that fits.
  const std::array<const std::vector<record>*, 3> sections{&m.answers, &m.authority, &m.additional};
  std::array<std::size_t, 3> kept{};
  std::size_t used = fixed;
  bool full = false;
  bool truncated = false;
  for (std::size_t s = 0; s < sections.size(); ++s) {
    for (const record& r : *sections[s]) {
      const std::size_t size = record_size(r);
      // A record whose RDATA is too long for RDLENGTH cannot be encoded at all.
      if (full || r.rdata.size() > detail::max_rdata_size || used + size > limit) {
        full = true;
        if (s < 2) truncated = true;  // an answer or authority record is missing
        break;
      }
      used += size;
      ++kept[s];
    }
  }

  std::string out;
  out.reserve(used);
  put_u16(out, m.hdr.id);
  put_u16(out, truncated ? static_cast<std::uint16_t>(m.hdr.flags | flag::tc) : m.hdr.flags);
  put_u16(out, static_cast<std::uint16_t>(qcount));
  put_u16(out, static_cast<std::uint16_t>(kept[0]));
  put_u16(out, static_cast<std::uint16_t>(kept[1]));
  put_u16(out, static_cast<std::uint16_t>(kept[2] + (m.opt ? 1 : 0)));
  for (std::size_t i = 0; i < qcount; ++i) {
    put_name(out, m.questions[i].qname);
    put_u16(out, m.questions[i].qtype);
    put_u16(out, m.questions[i].qclass);
  }
  for (std::size_t s = 0; s < sections.size(); ++s) {
    for (std::size_t i = 0; i < kept[s]; ++i) put_record(out, (*sections[s])[i]);
  }
  if (m.opt) put_opt(out, *m.opt, with_ede);
  return out;
}

std::string build_error(const query& q, rcode rc, std::optional<std::pair<std::uint16_t, std::string>> ede) {
  message m;
  m.hdr.id = q.hdr.id;
  m.hdr.flags = static_cast<std::uint16_t>(flag::qr | flag::ra | (q.hdr.flags & (flag::rd | flag::cd)));
  auto code = static_cast<std::uint8_t>(rc);
  if (code > 0xF && !q.opt) code = static_cast<std::uint8_t>(rcode::servfail);
  m.hdr.flags = static_cast<std::uint16_t>(m.hdr.flags | (code & 0xF));
  m.questions.push_back(q.q);
  if (q.opt) {
    edns& e = m.opt.emplace();
    e.udp_size = our_udp_size;
    e.extended_rcode = static_cast<std::uint8_t>(code >> 4);
    e.dnssec_ok = q.opt->dnssec_ok;
    if (ede) {
      const std::size_t base = detail::header_size + name_size(q.q.qname) + 4 + opt_fixed_size + ede_fixed_size;
      std::string text = std::move(ede->second);
      const std::size_t room = base < error_reply_limit ? error_reply_limit - base : 0;
      if (text.size() > room) {
        // Back up over UTF-8 continuation bytes so the cut never splits a character.
        std::size_t cut = room;
        while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
        text.resize(cut);
      }
      e.ede = extended_error{ede->first, std::move(text)};
    }
  }
  return build(m, error_reply_limit);
}

std::string build_error(const header& client, rcode rc) {
  constexpr std::uint16_t opcode_mask = 0x7800;
  auto code = static_cast<std::uint8_t>(rc);
  if (code > 0xF) code = static_cast<std::uint8_t>(rcode::servfail);  // no OPT to carry it
  // The opcode is echoed so a NOTIMP for NOTIFY or UPDATE is recognisable as their reply.
  const auto flags = static_cast<std::uint16_t>(flag::qr | flag::ra | (client.flags & opcode_mask) |
                                                (client.flags & flag::rd) | code);
  std::string out;
  put_u16(out, client.id);
  put_u16(out, flags);
  for (int i = 0; i < 4; ++i) put_u16(out, 0);  // no question, no records
  return out;
}

std::string build_query(std::uint16_t id, const name& qname, std::uint16_t qtype) {
  message m;
  m.hdr.id = id;
  m.hdr.flags = flag::rd;
  m.questions.push_back(question{qname, qtype, class_in});
  m.opt.emplace().udp_size = our_udp_size;
  return build(m);
}

}  // namespace airlock::dns::wire
