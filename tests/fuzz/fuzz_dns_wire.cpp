// libFuzzer target for dns/wire: both parsers on arbitrary bytes, plus the round-trip invariants
// that make re-emitting parsed data safe (what we build, we parse back to the same records).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "dns/wire.hpp"

namespace wire = airlock::dns::wire;

namespace {

void check(bool ok) {
  if (!ok) std::abort();
}

std::span<const std::byte> bytes(const std::string& s) { return std::as_bytes(std::span(s)); }

// `got` must be the first got.size() records of `want`, and all of them unless truncated.
void check_prefix(const std::vector<wire::record>& got, const std::vector<wire::record>& want, bool truncated) {
  check(got.size() <= want.size());
  check(truncated || got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i) check(got[i] == want[i]);
}

void check_name_text(const wire::name& n) {
  auto back = wire::name_from_text(n.to_text());
  check(back.has_value());
  check(*back == n);
}

void round_trip_message(const wire::message& m, std::size_t max_size) {
  const std::string out = wire::build(m, max_size);
  auto back = wire::parse_message(bytes(out));
  check(back.has_value());
  const bool dropped = back->answers.size() + back->authority.size() + back->additional.size() <
                       m.answers.size() + m.authority.size() + m.additional.size();
  check(out.size() <= max_size || !dropped);
  check(back->hdr.id == m.hdr.id);
  check(back->questions == m.questions);
  check_prefix(back->answers, m.answers, dropped);
  check_prefix(back->authority, m.authority, dropped);
  check_prefix(back->additional, m.additional, dropped);
  // TC is set exactly when an answer or authority record went (or was already set).
  const bool lost_needed = back->answers.size() < m.answers.size() || back->authority.size() < m.authority.size();
  check(back->hdr.tc() == (m.hdr.tc() || lost_needed));
  check(back->opt.has_value() == m.opt.has_value());
  if (m.opt) {
    check(back->opt->udp_size == m.opt->udp_size);
    check(back->opt->version == m.opt->version);
    check(back->opt->extended_rcode == m.opt->extended_rcode);
    check(back->opt->dnssec_ok == m.opt->dnssec_ok);
    // The EDE is dropped exactly when header, questions and OPT with it exceed max_size.
    std::size_t fixed = 12 + 11;
    for (const auto& q : m.questions) fixed += q.qname.wire.size() + 4;
    const bool ede_fits = m.opt->ede && fixed + 6 + m.opt->ede->text.size() <= max_size;
    check(back->opt->ede == (ede_fits ? m.opt->ede : std::nullopt));
  }
}

void exercise_query(const wire::query& q, const std::uint8_t* data, std::size_t size) {
  check_name_text(q.q.qname);
  static constexpr wire::rcode codes[] = {wire::rcode::formerr, wire::rcode::servfail, wire::rcode::refused,
                                          wire::rcode::badvers};
  const wire::rcode rc = codes[size % 4];
  std::optional<std::pair<std::uint16_t, std::string>> ede;
  if (size % 3 != 0) {
    // Reuse the input as EDE text: arbitrary, often invalid UTF-8, sometimes long.
    ede.emplace(static_cast<std::uint16_t>(size), std::string(reinterpret_cast<const char*>(data), size));
  }
  const std::string err = wire::build_error(q, rc, ede);
  check(err.size() <= 512);
  auto back = wire::parse_message(bytes(err));
  check(back.has_value());
  check(back->hdr.id == q.hdr.id);
  check(back->hdr.rd() == q.hdr.rd());
  check(back->questions.size() == 1 && back->questions[0] == q.q);
  check(back->opt.has_value() == q.opt.has_value());
  const unsigned full_rcode = back->hdr.rcode_bits() | (back->opt ? unsigned{back->opt->extended_rcode} << 4 : 0U);
  const bool badvers_possible = rc != wire::rcode::badvers || q.opt.has_value();
  check(full_rcode == (badvers_possible ? static_cast<unsigned>(rc) : 2U));
  if (q.opt && ede) {
    check(back->opt->ede.has_value());
    check(back->opt->ede->info_code == ede->first);
    check(ede->second.starts_with(back->opt->ede->text));
  } else {
    check(!back->opt || !back->opt->ede);
  }
  check(back->answers.empty() && back->authority.empty() && back->additional.empty());

  const std::string forwarded = wire::build_query(q.hdr.id, q.q.qname, q.q.qtype);
  auto again = wire::parse_query(bytes(forwarded));
  check(again.has_value());
  check(again->q.qname == q.q.qname && again->q.qtype == q.q.qtype);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::span<const std::byte> packet(reinterpret_cast<const std::byte*>(data), size);

  if (auto h = wire::parse_header(packet); h.has_value()) {
    auto back = wire::parse_header(bytes(wire::build_error(*h, wire::rcode::formerr)));
    check(back.has_value() && back->id == h->id && back->qr());
  }
  if (auto q = wire::parse_query(packet); q.has_value()) exercise_query(*q, data, size);

  if (auto m = wire::parse_message(packet); m.has_value()) {
    for (const auto& q : m->questions) check_name_text(q.qname);
    for (const auto* section : {&m->answers, &m->authority, &m->additional}) {
      for (const auto& r : *section) check_name_text(r.owner);
    }
    round_trip_message(*m, 65535);
    round_trip_message(*m, 512);
  }
  return 0;
}
