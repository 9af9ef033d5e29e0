#pragma once
// What a connection's first bytes decide, before any I/O: the verdict on the name they
// carry, or, carrying none, on the original destination (a cidr rule, or a name this
// session got that address for from airlock's DNS). Pure but for the one-shot redirect
// allowance a connection uses up, so the listeners and the property fuzz target
// (tests/fuzz/fuzz_judge.cpp, ROBUSTNESS F3) run the same code.
#include "dns/name_table.hpp"
#include "policy/domain_name.hpp"
#include "policy/redirect_grants.hpp"
#include "policy/snapshot.hpp"
#include "proxy/first_bytes.hpp"

#include <boost/asio/ip/address.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace airlock::proxy {

struct judgement {
  policy::verdict verdict = policy::verdict::deny;
  policy::reason reason = policy::reason::internal_error;
  std::string rule = "default";
  bool inspect = false;                     // the allowing rule asks for its requests to be judged
  std::optional<policy::domain_name> name;  // airlock connects to its own resolution of it; none: to the destination
  std::string logged_name;                  // the line's name (also on a denial); empty: the caller's stands
  std::vector<std::string> notes;

  bool allowed() const noexcept { return verdict != policy::verdict::deny; }
};

// A host as a client named it (SNI, Host, CONNECT): invalid_name when it is no domain
// name; else the policy's decision, where a followed redirect's allowance for this session
// may turn host_not_allowed into an allow (and is used up).
judgement judge_host(std::string_view host, std::uint16_t port, std::string_view session,
                     const policy::compiled_policy& policy, policy::redirect_grants* grants);

// An address the client named (CONNECT 198.51.100.7:443): only a cidr rule allows it.
judgement judge_address(const boost::asio::ip::address& address, std::uint16_t port,
                        const policy::compiled_policy& policy);

// A transparent connection to `dst`:`port` whose first bytes are `first`. A failed parse is
// denied with its reason; an HTTP Host naming another port than the packet's is refused
// (host_port_mismatch); a name is judged by judge_host; no name (or an address written as
// one) only by a cidr rule, or by the best of the names `names` holds for this session and
// address: one that allows with inspection, then one that allows, then a denial to name.
// Opaque bytes towards an address whose allowing name inspects are refused.
judgement judge_transparent(const sniffed& first, const boost::asio::ip::address& dst, std::uint16_t port,
                            std::string_view session, const policy::compiled_policy& policy,
                            const dns::name_table& names, policy::redirect_grants* grants,
                            dns::name_table::clock::time_point now);

}  // namespace airlock::proxy
