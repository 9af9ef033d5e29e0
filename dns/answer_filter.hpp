// The DNS answer filter: what an upstream answer may carry to a sandbox (ROBUSTNESS.md C8).
//
// Pure function over a parsed wire::message, no I/O. It keeps the CNAME chain under the asked
// name and nothing beside it, takes out addresses the sandbox must not be steered to (rebinding,
// cloud metadata, NAT64/6to4 wrappers of those), and rewrites HTTPS/SVCB records so they cannot
// carry addresses or an encrypted SNI past the policy. Deciding what to do when nothing is left
// (NOERROR/no data, reason private_address) and recording addresses in the name table is the
// caller's job.
#pragma once

#include "dns/wire.hpp"
#include "policy/own_addresses.hpp"

#include <boost/asio/ip/address.hpp>

#include <cstddef>
#include <functional>
#include <vector>

namespace airlock::dns {

struct filter_settings {
  bool ipv6 = true;          // the sandbox has an IPv6 path; false: AAAA records are removed (clients
                             // without Happy Eyeballs hang otherwise)
  bool quic_blocked = true;  // QUIC is dropped at the gateway: "h3*" ALPN ids are removed from
                             // HTTPS/SVCB so clients do not try it
};

struct filter_outcome {
  std::vector<boost::asio::ip::address> addresses;  // A/AAAA kept, in order (what the name table records)
  std::vector<wire::name> chain;                    // qname, then each CNAME target followed
  std::size_t removed_special = 0;                  // A/AAAA in special ranges, not allowed by `allow_special`
  std::size_t removed_out_of_chain = 0;             // records whose owner is not qname or a CNAME target in
                                                    // the chain, and CNAMEs that do not extend it (a second
                                                    // CNAME at one name, a loop, a link past the cap)
  std::size_t removed_aaaa = 0;                     // settings.ipv6 == false
  std::size_t svcb_rewritten = 0;                   // HTTPS/SVCB records that lost params (ech, hints, h3, ...)
  std::size_t removed_malformed = 0;                // in-chain records we could not check (bad SvcParams,
                                                    // CNAME target or A/AAAA size), or HTTPS/SVCB whose
                                                    // `mandatory` list names a key the rewrite removed
  std::size_t removed_other = 0;                    // DNAME, and records of a class other than IN

  // Answer-section records removed, for whatever reason.
  std::size_t removed() const noexcept {
    return removed_special + removed_out_of_chain + removed_aaaa + removed_malformed + removed_other;
  }
};

// Most names a chain may hold, qname included; links past it are dropped with what hangs off them.
inline constexpr std::size_t max_chain_names = 16;

// Filters an upstream answer in place so only what the client may use reaches it.
// `allow_special(address)` says whether a special address is allowed anyway (a cidr rule); an
// empty function allows none. Addresses in `own` (airlock's own and its sandboxes') are
// special here whatever their class. Answer records keep their order; authority keeps only SOA records;
// additional is cleared (answer.opt is not touched). Names in `answer` must be well formed (as
// parse_message makes them); rdata of other types is checked here and never trusted.
filter_outcome filter_answer(wire::message& answer, const wire::name& qname, const filter_settings& settings,
                             const std::function<bool(const boost::asio::ip::address&)>& allow_special,
                             const policy::own_addresses* own = nullptr);

}  // namespace airlock::dns
