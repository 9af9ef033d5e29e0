#include "proxy/judge.hpp"

#include "base/trim.hpp"
#include "policy/grant_check.hpp"
#include "policy/redirect_check.hpp"

#include <algorithm>
#include <cctype>
#include <utility>

namespace airlock::proxy {

using policy::reason;
using policy::verdict;

namespace {

judgement from(const policy::decision& d) {
  judgement j;
  j.verdict = d.verdict;
  j.reason = d.reason;
  j.rule = std::string(d.rule);
  j.inspect = d.inspect;
  j.protocol = d.protocol;
  return j;
}

judgement refused(reason why, std::string note = {}) {
  judgement j;
  j.reason = why;
  if (!note.empty()) j.notes.push_back(std::move(note));
  return j;
}

// What a refusal for the protocol says was spoken, for the line's notes.
std::string spoke_note(const sniffed& first) {
  switch (first.type) {
    case sniffed::kind::tls: return first.name.empty() ? "spoke:tls_without_sni" : "spoke:tls";
    case sniffed::kind::http: return first.name.empty() ? "spoke:http_without_host" : "spoke:http";
    case sniffed::kind::opaque: return first.silent ? "spoke:nothing" : "spoke:opaque";
    case sniffed::kind::unknown: break;
  }
  return "spoke:unknown";
}

}  // namespace

policy::wire spoken_by(const sniffed& first, bool by_address) noexcept {
  const bool named = !first.name.empty() && !policy::is_ip_literal(first.name);
  switch (first.type) {
    case sniffed::kind::tls: return named || by_address ? policy::wire::tls : policy::wire::opaque;
    case sniffed::kind::http: return named || by_address ? policy::wire::http : policy::wire::opaque;
    case sniffed::kind::opaque:
    case sniffed::kind::unknown: break;
  }
  return policy::wire::opaque;
}

namespace {

judgement with_spoken(judgement j, const sniffed& first) {
  if (j.reason == reason::protocol_not_allowed) j.notes.push_back(spoke_note(first));
  return j;
}

}  // namespace

std::optional<reason> granted_by(reason r) noexcept {
  if (r == reason::redirect_allowed || r == reason::grant_allowed) return r;
  return std::nullopt;
}

judgement judge_host(std::string_view host, std::uint16_t port, std::string_view session,
                     const policy::compiled_policy& policy, const allowances& given, policy::wire spoken) {
  auto parsed = policy::domain_name::parse(host);
  if (!parsed.has_value()) return refused(reason::invalid_name);
  auto d = policy.decide(*parsed, port, spoken);
  std::string granted_rule;  // d.rule's text when a grant or a redirect's allowance decided
  auto use = policy::check_grants(given.grants, d, session, *parsed, true, port, spoken);
  policy::apply_grant(use, d, granted_rule);
  // A redirect's allowance is for the web request the redirect sent the client to.
  const auto redirect = spoken == policy::wire::opaque
                            ? policy::redirect_outcome{}
                            : policy::check_redirects(given.redirects, d, session, *parsed, true, port, spoken);
  policy::apply_redirect(redirect, d, granted_rule);
  judgement j = from(d);
  if (use) j.cut = std::move(use->cut);
  j.logged_name = parsed->str();
  j.name = std::move(*parsed);
  if (redirect.what != policy::redirect_outcome::kind::none) j.notes.push_back("redirect_from:" + redirect.from_host);
  return j;
}

judgement judge_address(const boost::asio::ip::address& address, std::uint16_t port,
                        const policy::compiled_policy& policy, policy::wire spoken) {
  return from(policy.decide(address, port, spoken));
}

judgement judge_transparent(const sniffed& first, const boost::asio::ip::address& dst, std::uint16_t port,
                            std::string_view session, const policy::compiled_policy& policy,
                            const dns::name_table& names, const allowances& given,
                            dns::name_table::clock::time_point now) {
  if (first.failure) return refused(*first.failure);
  // Host says one port, the packet another: ambiguous, so refused.
  if (first.type == sniffed::kind::http && first.port && *first.port != port)
    return refused(reason::parse_error, "host_port_mismatch");
  if (!first.name.empty() && !policy::is_ip_literal(first.name))
    return with_spoken(judge_host(first.name, port, session, policy, given, spoken_by(first, false)), first);

  // No name at all (or an address written as one): a cidr rule, or an address this session
  // got from airlock's DNS for a name allowed on this port.
  judgement j = judge_address(dst, port, policy, spoken_by(first, true));
  if (j.reason != reason::no_name) return with_spoken(std::move(j), first);
  const auto nameless = spoken_by(first, false);
  // The best of the names this session got the address for: an allowing one that inspects
  // (its requests must be judged whatever else shares the address), then any allowing
  // one, then a denial to name in the log.
  auto rank = [](const policy::decision& x) {
    return x.verdict == verdict::allow ? (x.inspect ? 3 : 2) : x.allowed() ? 1 : 0;
  };
  std::optional<policy::decision> best;
  std::optional<policy::domain_name> inspecting;
  std::optional<policy::domain_name> granted;  // best stands on a grant for this name
  std::string candidate_rule, best_rule;       // a grant's rule text, for the decisions' views
  for (const auto& e : names.lookup(session, dst, now)) {
    auto known = policy::domain_name::parse(e.name);
    if (!known.has_value()) continue;
    auto nd = policy.decide(*known, port, nameless);
    // Asked, not taken: only the name that wins uses the grant.
    policy::apply_grant(policy::check_grants(given.grants, nd, session, *known, false, port, nameless), nd,
                        candidate_rule);
    if (!best || rank(nd) > rank(*best)) {
      best = nd;
      j.logged_name = e.name;  // named in the log even when denied (e.g. port_not_allowed)
      if (nd.verdict == verdict::allow && nd.inspect) inspecting = std::move(*known);
      else if (nd.reason == reason::grant_allowed) {
        best_rule = candidate_rule;
        best->rule = best_rule;
        granted = std::move(*known);
      }
    }
    if (rank(nd) == 3) break;
  }
  if (!best) return j;
  auto logged = std::move(j.logged_name);
  std::shared_ptr<base::cut_switch> cut;
  if (best->reason == reason::grant_allowed) {
    // Now the connection uses it (it may have ended since it was asked).
    best = policy.decide(*granted, port, nameless);
    auto use = policy::check_grants(given.grants, *best, session, *granted, true, port, nameless);
    policy::apply_grant(use, *best, best_rule);
    if (use) cut = std::move(use->cut);
  }
  j = with_spoken(from(*best), first);
  j.cut = std::move(cut);
  j.logged_name = std::move(logged);
  j.notes.push_back("name_from_dns_answer");
  if (inspecting) {
    if (first.type == sniffed::kind::opaque) {
      // Bytes that are neither TLS nor a request line we read (a leading CRLF, say) would
      // be relayed unjudged to a host whose every request must be judged: refused.
      j.verdict = verdict::deny;
      j.reason = reason::parse_error;
      j.inspect = false;
      j.notes.push_back("opaque_on_inspecting_rule");
    } else {
      j.name = std::move(*inspecting);
    }
  }
  return j;
}

judgement judge_tunnel(const sniffed& first, const judgement& granted, std::string_view host, std::uint16_t port,
                       const policy::compiled_policy& policy) {
  if (first.failure) return refused(*first.failure);
  boost::system::error_code not_address;
  const auto literal = boost::asio::ip::make_address(host, not_address);
  if (!not_address) return with_spoken(judge_address(literal, port, policy, spoken_by(first, true)), first);
  if (!first.name.empty()) {
    const auto said = policy::domain_name::parse(first.name);
    const auto asked = policy::domain_name::parse(host);
    if (!said.has_value() || !asked.has_value() || !(*said == *asked) ||
        (first.type == sniffed::kind::http && first.port && *first.port != port))
      return refused(reason::sni_connect_mismatch, (first.type == sniffed::kind::tls ? "sni:" : "host:") + first.name);
  }
  const auto spoken = spoken_by(first, false);
  if (granted.reason == reason::redirect_allowed || granted.reason == reason::grant_allowed) {
    // What the redirect's scheme speaks, and only that: an http:// redirect is no TLS
    // tunnel. A grant's port carries what that port does (any bytes off 80 and 443).
    const bool opaque_ok = granted.reason == reason::grant_allowed;
    if ((opaque_ok || spoken != policy::wire::opaque) && policy::admits(granted.protocol, spoken)) return granted;
    auto j = refused(reason::protocol_not_allowed, spoke_note(first));
    j.rule = granted.rule;
    return j;
  }
  return with_spoken(judge_host(host, port, {}, policy, {}, spoken), first);
}

namespace {

bool is_websocket_upgrade(const http_head::request& r) noexcept {
  constexpr std::string_view token = "websocket";
  const auto up = base::trim(r.upgrade);
  return r.method == "GET" && up.size() == token.size() &&
         std::equal(up.begin(), up.end(), token.begin(),
                    [](char a, char b) { return std::tolower(static_cast<unsigned char>(a)) == b; });
}

}  // namespace

request_judgement judge_request(const http_head::request& r, const request_scope& scope, std::uint64_t number,
                                std::string& plain_host) {
  request_judgement j;
  const auto host = policy::domain_name::parse(r.host);
  bool same_host = host.has_value() && *host == scope.name && (!r.port || *r.port == scope.port);
  if (!scope.tls) {
    std::string named = r.host + ":" + std::to_string(r.port.value_or(scope.port));
    std::transform(named.begin(), named.end(), named.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    if (number == 0) plain_host = named;
    same_host = named == plain_host;
  }
  j.switching = r.method == "CONNECT" || !r.upgrade.empty();
  j.websocket = scope.websockets && is_websocket_upgrade(r);
  if (!same_host) {
    // Plain HTTP/1.1 clients never reuse a connection for another host: there a change of
    // host is refused. A TLS client may (its certificate covers both): 421 sends it to a
    // new connection, judged on its own.
    if (scope.tls && number == 0) {
      j.reason = reason::sni_host_mismatch;
    } else {
      j.reason = reason::misdirected;
      j.refusal = scope.tls ? 421 : 403;
      if (!scope.tls) j.note = "host_changed";
    }
    return j;
  }
  // A WebSocket upgrade is judged as the GET it is (host, path, method) where airlock follows
  // it; any other switch only where the port carries anything, and never inside TLS.
  if (j.switching && !j.websocket && !(scope.upgrades && !scope.tls)) {
    j.reason = reason::protocol_not_allowed;
    j.note = r.method == "CONNECT" ? std::string("method:CONNECT") : "upgrade:" + r.upgrade;
    return j;
  }
  if (scope.cut != nullptr && scope.cut->pulled()) {
    j.reason = reason::grant_ended;
    j.rule = scope.granted_rule;
    return j;
  }
  const auto d = scope.granted ? policy::decision{verdict::allow, *scope.granted, scope.granted_rule}
                               : scope.policy.decide_request(scope.name, scope.port, r.method,
                                                             http_head::origin_target(r.target, r.absolute_form));
  j.verdict = d.verdict;
  j.reason = d.reason;
  j.rule = d.rule;
  if (d.reason == reason::parse_error) j.refusal = 400;
  return j;
}

}  // namespace airlock::proxy
