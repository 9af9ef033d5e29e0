#include "dns/answer_filter.hpp"

#include "dns/svcb_filter.hpp"
#include "policy/special_addresses.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace airlock::dns {
namespace {

// The target of a CNAME whose rdata is exactly one well-formed name.
std::optional<wire::name> cname_target(const wire::record& rr) {
  if (uncompressed_name_length(rr.rdata) != rr.rdata.size()) return std::nullopt;
  return wire::name{rr.rdata};
}

std::optional<boost::asio::ip::address> address_of(const wire::record& rr) {
  if (rr.rtype == wire::type::a && rr.rdata.size() == 4) {
    boost::asio::ip::address_v4::bytes_type b;
    std::memcpy(b.data(), rr.rdata.data(), b.size());
    return boost::asio::ip::address_v4(b);
  }
  if (rr.rtype == wire::type::aaaa && rr.rdata.size() == 16) {
    boost::asio::ip::address_v6::bytes_type b;
    std::memcpy(b.data(), rr.rdata.data(), b.size());
    return boost::asio::ip::address_v6(b);
  }
  return std::nullopt;
}

// Follows CNAMEs from qname in whatever order the records come, marking the links followed.
// Stops at the cap, at a loop, or where no (well-formed) CNAME continues the chain; where a name
// has two CNAMEs, the first one wins and the other is left unmarked.
std::vector<bool> follow_chain(const std::vector<wire::record>& answers, std::vector<wire::name>& chain) {
  // Most answers hold no CNAME at all: nothing to mark (is_link is read for CNAMEs only).
  if (std::none_of(answers.begin(), answers.end(),
                   [](const wire::record& rr) { return rr.rtype == wire::type::cname; }))
    return {};
  std::vector<bool> is_link(answers.size(), false);
  auto in_chain = [&](const wire::name& n) {
    return std::any_of(chain.begin(), chain.end(), [&](const wire::name& c) { return c.equals_ignore_case(n); });
  };
  while (chain.size() < max_chain_names) {
    bool extended = false;
    for (std::size_t i = 0; i < answers.size() && !extended; ++i) {
      const auto& rr = answers[i];
      if (rr.rtype != wire::type::cname || rr.rclass != wire::class_in || !rr.owner.equals_ignore_case(chain.back()))
        continue;
      auto target = cname_target(rr);
      if (!target) continue;
      if (in_chain(*target)) return is_link;  // a loop: what it would add is already here
      is_link[i] = true;
      chain.push_back(std::move(*target));
      extended = true;
    }
    if (!extended) break;
  }
  return is_link;
}

}  // namespace

filter_outcome filter_answer(wire::message& answer, const wire::name& qname, const filter_settings& settings,
                             const std::function<bool(const boost::asio::ip::address&)>& allow_special,
                             const policy::own_addresses* own) {
  filter_outcome outcome;
  outcome.chain.push_back(qname);
  // Links are found before anything is removed, so a CNAME may follow the records it leads to.
  const std::vector<bool> is_link = follow_chain(answer.answers, outcome.chain);
  auto in_chain = [&](const wire::name& n) {
    return std::any_of(outcome.chain.begin(), outcome.chain.end(),
                       [&](const wire::name& c) { return c.equals_ignore_case(n); });
  };

  // Kept records are compacted to the front in place: no second vector per answer.
  std::size_t kept = 0;
  const auto keep = [&](std::size_t i) {
    if (kept != i) answer.answers[kept] = std::move(answer.answers[i]);
    ++kept;
  };
  for (std::size_t i = 0; i < answer.answers.size(); ++i) {
    auto& rr = answer.answers[i];
    // DNAME: the resolver synthesises the CNAME we follow anyway, and a client that acted on the
    // DNAME itself would map names we never looked at. Other classes: we only answer IN.
    if (rr.rclass != wire::class_in || rr.rtype == wire::type::dname) {
      ++outcome.removed_other;
      continue;
    }
    if (rr.rtype == wire::type::cname) {
      if (is_link[i]) {
        keep(i);
      } else if (in_chain(rr.owner) && !cname_target(rr)) {
        ++outcome.removed_malformed;
      } else {
        ++outcome.removed_out_of_chain;
      }
      continue;
    }
    // Anti-poisoning: anything beside the chain is data about names nobody asked for.
    if (!in_chain(rr.owner)) {
      ++outcome.removed_out_of_chain;
      continue;
    }
    if (rr.rtype == wire::type::a || rr.rtype == wire::type::aaaa) {
      if (rr.rtype == wire::type::aaaa && !settings.ipv6) {
        ++outcome.removed_aaaa;
        continue;
      }
      const auto address = address_of(rr);
      if (!address) {
        ++outcome.removed_malformed;
        continue;
      }
      // DNS rebinding: an allowed name must not lead to an internal address unless a cidr rule
      // allows exactly that.
      const bool special = policy::is_special(policy::classify(*address)) || (own && own->contains(*address));
      if (special && !(allow_special && allow_special(*address))) {
        ++outcome.removed_special;
        continue;
      }
      outcome.addresses.push_back(*address);
    } else if (rr.rtype == wire::type::https || rr.rtype == wire::type::svcb) {
      auto rdata = filter_svcb(rr.rdata, settings.quic_blocked);
      if (!rdata) {
        ++outcome.removed_malformed;
        continue;
      }
      if (*rdata != rr.rdata) {
        ++outcome.svcb_rewritten;
        rr.rdata = std::move(*rdata);
      }
    }
    keep(i);
  }
  answer.answers.resize(kept);

  // Negative caching needs the SOA; NS and the rest would only point clients at other servers.
  std::erase_if(answer.authority,
                [](const wire::record& rr) { return rr.rtype != wire::type::soa || rr.rclass != wire::class_in; });
  // Glue and other additional addresses would bypass the filter above. The OPT is kept apart.
  answer.additional.clear();
  return outcome;
}

}  // namespace airlock::dns
