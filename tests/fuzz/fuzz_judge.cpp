// libFuzzer target for the peek-and-judge path of a transparent connection (ROBUSTNESS F3):
// random first bytes (mutated ClientHellos and request heads from the seeds), a random
// original destination and port, and a random DNS history and set of redirect allowances
// for the session. Besides memory safety it checks airlock's central invariant:
//
//   allow => the bytes parsed, and the name they carry is allowed on that port (or a
//            redirect allowance for it existed), or, with no name, the address is allowed
//            by a cidr rule or was handed to this session for a name allowed on that port;
//            and what they spoke is what the port carries: TLS naming its host on 443, a
//            request naming it on 80 (no rule below widens either), anything on 8443,
//            which one rule opens to `any`.
//
// Anything else must be a denial with a reason. (Limits are checked before the judge, by
// steps::admit; tests/unit/proxy/limits_test.cpp covers them.)
//
// Input: byte 0 picks the destination, byte 1 the port, bytes 2-3 which (name, address)
// pairs airlock's DNS handed out, byte 4 the redirect allowances and whether the client
// closed after its bytes; the rest are the first bytes.
#include "dns/name_table.hpp"
#include "policy/config.hpp"
#include "policy/redirect_grants.hpp"
#include "policy/snapshot.hpp"
#include "proxy/first_bytes.hpp"
#include "proxy/judge.hpp"

#include <array>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <optional>
#include <vector>

namespace {

namespace asio = boost::asio;
using airlock::policy::domain_name;
using airlock::policy::verdict;
using airlock::proxy::sniffed;

// libFuzzer only reports what crashes, so a broken invariant must abort.
void require(bool holds) {
  if (!holds) std::abort();
}

constexpr const char* policy_text = R"(version: 1
inspection:
  ca_dir: /nonexistent
policies:
  p:
    allow:
      - host: allowed.test
        ports: [80, 443, {port: 8443, protocol: any}]
      - host: ssh.test
        ports: [22]
      - host: inspect.test
        inspect: true
      - host: "*.cdn.test"
        ports: [443]
      - cidr: 198.51.100.10/32
        ports: [8080]
    deny:
      - host: no.cdn.test
    redirects:
      - from: inspect.test
        to: ["*.cdn.test"]
sessions:
  - id: s
    source: 198.51.100.0/24
    policy: p
)";

const airlock::policy::compiled_policy& the_policy() {
  static const auto snap = [] {
    auto cfg = airlock::policy::load_config_text(policy_text, "fuzz.yaml");
    require(cfg.has_value());
    auto s = airlock::policy::snapshot::compile(*cfg);
    require(s.has_value());
    return *s;
  }();
  static const auto* p = snap->find_policy("p");
  require(p != nullptr);
  return *p;
}

const std::array<asio::ip::address, 4> addresses{
    asio::ip::make_address("203.0.113.10"), asio::ip::make_address("203.0.113.66"),
    asio::ip::make_address("198.51.100.10"), asio::ip::make_address("2001:db8::10")};
constexpr std::array<std::uint16_t, 6> ports{443, 80, 22, 8080, 2222, 8443};
constexpr std::array<const char*, 4> answered_names{"allowed.test", "ssh.test", "inspect.test", "evil.test"};

domain_name name_of(const char* text) {
  auto n = domain_name::parse(text);
  require(n.has_value());
  return *n;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 5) return 0;
  const auto& policy = the_policy();
  const auto now = airlock::dns::name_table::clock::now();
  const auto& dst = addresses[data[0] % addresses.size()];
  const std::uint16_t port = ports[data[1] % ports.size()];
  const unsigned answered = data[2] | (static_cast<unsigned>(data[3]) << 8u);
  const std::uint8_t flags = data[4];

  // What airlock's DNS handed to session "s", and the redirect allowances it holds.
  airlock::dns::name_table names;
  for (std::size_t n = 0; n < answered_names.size(); ++n)
    for (std::size_t a = 0; a < addresses.size(); ++a)
      if (answered & (1u << (n * addresses.size() + a))) names.record("s", addresses[a], answered_names[n], 1, 60, now);
  airlock::policy::redirect_grants grants;
  airlock::policy::redirect_grants tunnel_grants;  // the same, for the CONNECT below to use up
  const auto from = name_of("inspect.test");
  // As a followed redirect grants: a port and the scheme's protocol, one the port carries
  // (https://x.cdn.test/; https://evil.test:PORT/ where the port carries TLS, else http://).
  using airlock::policy::port_protocol;
  for (auto* g : {&grants, &tunnel_grants}) {
    if (flags & 1)
      g->grant("s", name_of("x.cdn.test"), from, "fuzz.yaml:1", now, std::chrono::seconds(30), 443, port_protocol::tls);
    if (flags & 2)
      g->grant("s", name_of("evil.test"), from, "fuzz.yaml:2", now, std::chrono::seconds(30), port,
               airlock::policy::default_protocol(port) == port_protocol::tls ? port_protocol::tls
                                                                             : port_protocol::http);
  }
  const bool at_eof = flags & 4;

  std::vector<std::byte> bytes(reinterpret_cast<const std::byte*>(data + 5),
                               reinterpret_cast<const std::byte*>(data + size));
  auto classified = airlock::proxy::classify_first_bytes(bytes, at_eof);
  // Bytes that never make a whole message end at the peek deadline, as the sniffer does.
  const sniffed first = classified ? std::move(*classified)
                                   : airlock::proxy::failed_as(bytes, airlock::policy::reason::timeout);

  // The oracle's view, taken before the judge uses up an allowance.
  const bool named = !first.name.empty() && !airlock::policy::is_ip_literal(first.name);
  std::optional<domain_name> parsed;
  if (auto p = domain_name::parse(first.name); named && p.has_value()) parsed = std::move(*p);
  const bool name_allowed = parsed && policy.decide(*parsed, port).verdict == verdict::allow;
  const bool name_granted = parsed && grants.peek("s", *parsed, now).has_value();
  const bool address_allowed = policy.decide(dst, port).verdict == verdict::allow;
  bool address_bound = false;  // handed to "s" for a name allowed on this port
  bool bound_inspecting = false;
  for (const auto& e : names.lookup("s", dst, now)) {
    const auto d = policy.decide(name_of(e.name.c_str()), port);
    address_bound = address_bound || d.verdict == verdict::allow;
    bound_inspecting = bound_inspecting || (d.verdict == verdict::allow && d.inspect);
  }

  // The same bytes inside a CONNECT tunnel granted for one of the names (or for a redirect's
  // target, by its allowance): a name they carry is the CONNECT's, and the port's protocol
  // holds as on the transparent path.
  {
    static constexpr std::array<const char*, 6> connect_hosts{"allowed.test", "ssh.test",   "inspect.test",
                                                              "evil.test",    "x.cdn.test", "no.cdn.test"};
    const char* host = connect_hosts[data[0] % connect_hosts.size()];
    const auto granted = airlock::proxy::judge_host(host, port, "s", policy, {&tunnel_grants, nullptr},
                                                    airlock::policy::wire::unjudged);
    if (granted.allowed()) {
      const auto t = airlock::proxy::judge_tunnel(first, granted, host, port, policy);
      require(!t.rule.empty());
      if (t.verdict == verdict::allow) {
        require(!first.failure);
        require(first.name.empty() || name_of(first.name.c_str()) == name_of(host));
        if (port == 443) require(first.type == sniffed::kind::tls && !first.name.empty());
        if (port == 80) require(first.type == sniffed::kind::http && !first.name.empty());
      }
    }
  }

  const auto j = airlock::proxy::judge_transparent(first, dst, port, "s", policy, names, {&grants, nullptr}, now);

  require(!j.rule.empty());
  require(j.reason != airlock::policy::reason::internal_error);
  if (j.verdict != verdict::allow) return 0;
  require(!first.failure);
  require(!(first.type == sniffed::kind::http && first.port && *first.port != port));
  // Protocol per port, held without the policy's own protocol code.
  if (port == 443) require(first.type == sniffed::kind::tls && named);
  if (port == 80) require(first.type == sniffed::kind::http && named);
  if (named) {
    // The name carried is the name judged and connected to, never the destination.
    require(parsed.has_value() && j.name.has_value() && *j.name == *parsed);
    require(name_allowed || name_granted);
  } else {
    require(address_allowed || address_bound);
    if (j.name) require(address_bound && bound_inspecting);  // connected by the inspecting name
    // Opaque bytes never reach a host whose requests must be judged (unless a cidr rule
    // allows the address itself).
    require(address_allowed || !(first.type == sniffed::kind::opaque && bound_inspecting));
  }
  return 0;
}
