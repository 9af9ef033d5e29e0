#pragma once
// What a connection's first bytes decide, before any I/O: the verdict on the name they
// carry, or, carrying none, on the original destination (a cidr rule, or a name this
// session got that address for from airlock's DNS). Pure but for the one-shot redirect
// allowance a connection uses up, so the listeners and the property fuzz target
// (tests/fuzz/fuzz_judge.cpp, ROBUSTNESS F3) run the same code.
#include "base/cut_switch.hpp"
#include "dns/name_table.hpp"
#include "policy/domain_name.hpp"
#include "policy/redirect_grants.hpp"
#include "policy/session_grants.hpp"
#include "policy/snapshot.hpp"
#include "proxy/first_bytes.hpp"
#include "proxy/http_head.hpp"

#include <boost/asio/ip/address.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace airlock::proxy {

struct judgement {
  policy::verdict verdict = policy::verdict::deny;
  policy::reason reason = policy::reason::internal_error;
  std::string rule = "default";
  bool inspect = false;                                         // the allowing rule asks for its requests to be judged
  policy::port_protocol protocol = policy::port_protocol::any;  // allowed: what the port carries
  std::optional<policy::domain_name> name;  // airlock connects to its own resolution of it; none: to the destination
  std::string logged_name;                  // the line's name (also on a denial); empty: the caller's stands
  std::vector<std::string> notes;
  // Let through by a grant that cuts its connections when it ends: pulled then.
  std::shared_ptr<base::cut_switch> cut;

  bool allowed() const noexcept { return verdict != policy::verdict::deny; }
};

// What a session holds beside its policy: a followed redirect's one-shot allowances, and
// the grants it was given at run time. Either may be absent.
struct allowances {
  policy::redirect_grants* redirects = nullptr;
  policy::session_grants* grants = nullptr;
};

// The run-time reason a connection or request stands on instead of a rule (a redirect's
// allowance, a grant), or none.
std::optional<policy::reason> granted_by(policy::reason r) noexcept;

// A host as a client named it (SNI, Host, CONNECT) in bytes that spoke `spoken`:
// invalid_name when it is no domain name; else the policy's decision, where a grant of
// this session may turn a decision that lacked a rule (host_not_allowed, port_not_allowed)
// into an allow (counting a connection), and else a followed redirect's allowance may turn
// host_not_allowed into one (used up) for a web request (TLS, HTTP, or a CONNECT whose
// tunnel is judged next).
judgement judge_host(std::string_view host, std::uint16_t port, std::string_view session,
                     const policy::compiled_policy& policy, const allowances& given, policy::wire spoken);

// An address the client named (CONNECT 198.51.100.7:443): only a cidr rule allows it.
judgement judge_address(const boost::asio::ip::address& address, std::uint16_t port,
                        const policy::compiled_policy& policy, policy::wire spoken);

// What `first` spoke, as a port's protocol judges it: TLS or HTTP that names a host is
// itself; one that names none is `opaque` to a rule for a name (nothing in it says which
// host it is for) but `tls`/`http` to a cidr rule (`by_address`), which allows the
// address whatever name would have been sent.
policy::wire spoken_by(const sniffed& first, bool by_address) noexcept;

// A transparent connection to `dst`:`port` whose first bytes are `first`. A failed parse is
// denied with its reason; an HTTP Host naming another port than the packet's is refused
// (host_port_mismatch); a name is judged by judge_host; no name (or an address written as
// one) only by a cidr rule, or by the best of the names `names` holds for this session and
// address: one that allows with inspection, then one that allows (by a rule, or by a
// grant of this session for that name), then a denial to name.
// Every rule judges what was spoken against its port's protocol (policy/port_protocol.hpp):
// opaque bytes, a name-less TLS hello or HTTP where a rule wants TLS naming its host are
// protocol_not_allowed, with a note saying what was spoken. Opaque bytes towards an
// address whose allowing name inspects are refused.
judgement judge_transparent(const sniffed& first, const boost::asio::ip::address& dst, std::uint16_t port,
                            std::string_view session, const policy::compiled_policy& policy,
                            const dns::name_table& names, const allowances& given,
                            dns::name_table::clock::time_point now);

// The first bytes inside a CONNECT tunnel the explicit listener granted for `host` (a name,
// or an address written as one) with `granted`: judged as a transparent connection to that
// host would be. A name they carry must be the CONNECT's (else sni_connect_mismatch: the
// tunnel would carry another host); then the CONNECT's name is judged again with what was
// spoken (a name-less hello or opaque bytes pass only a port that carries `any`), or its
// address, by a cidr rule, with the bytes' kind. A CONNECT a redirect's allowance let
// through (used up by then) carries a web request, TLS or HTTP, and nothing else; one a
// grant let through carries what the grant's port does.
judgement judge_tunnel(const sniffed& first, const judgement& granted, std::string_view host, std::uint16_t port,
                       const policy::compiled_policy& policy);

// A connection that carries requests (plain HTTP, or TLS airlock terminates), as it was
// judged: each of its requests is judged again by judge_request.
struct request_scope {
  const policy::compiled_policy& policy;
  const policy::domain_name& name;  // the connection's: SNI, or its first request's Host
  std::uint16_t port;
  bool tls;
  bool upgrades;  // the port carries `any`: a request may switch protocols (plain HTTP only)
  // Let through by a followed redirect's allowance or a grant (granted_by): its requests
  // for the same host stand on that (`granted_rule`), not on a rule. A grant's `cut`
  // switch pulled (the grant ended) refuses them, grant_ended.
  std::optional<policy::reason> granted = std::nullopt;
  std::string_view granted_rule = {};
  const base::cut_switch* cut = nullptr;
  // Airlock serves the exchange itself (it reads the answers): a WebSocket upgrade the
  // policy allows may be followed (request_judgement::websocket). Relayed as bytes (the
  // request gate), it may not: a refused upgrade would leave the bytes after it unjudged.
  bool websockets = false;
};

struct request_judgement {
  policy::verdict verdict = policy::verdict::deny;
  policy::reason reason = policy::reason::internal_error;
  std::string_view rule = "default";
  unsigned refusal = 403;  // the status a denial is answered with
  bool switching = false;  // an Upgrade, or CONNECT inside the connection
  bool websocket = false;  // a WebSocket upgrade (GET, Upgrade: websocket) in a scope that follows them
  std::string note;        // why, beyond the reason (host_changed, upgrade:websocket...)
};

// The `number`th request (0: the first) of a connection in `scope`. Its host must be the
// connection's: on TLS the SNI's (a first request naming another is fronting, a later one
// is sent to a connection of its own with 421); on plain HTTP the first request's, as
// written with its port (`plain_host` keeps it), and a change is refused 403. A request
// that switches protocols passes only a plain port that carries `any`. Then the rule's
// methods and paths, by the origin-form target.
request_judgement judge_request(const http_head::request& r, const request_scope& scope, std::uint64_t number,
                                std::string& plain_host);

}  // namespace airlock::proxy
