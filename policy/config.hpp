#pragma once
// The configuration as written (YAML version 1), validated but not yet compiled.
// ../shared/design/ARCHITECTURE.md "Config" is the contract this mirrors.
#include "policy/cidr.hpp"
#include "policy/port_protocol.hpp"

#include <boost/system/result.hpp>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace airlock::policy {

// Where something was written: 1-based line and column, as editors count.
struct source_mark {
  std::string file;
  int line = 0;
  int column = 0;
  std::string to_string() const;  // "FILE:LINE" (what decisions name as their rule)
};

struct rule_config {
  enum class kind : std::uint8_t { host, wildcard, regex, cidr };
  kind type = kind::host;
  // host: the canonical name; wildcard: the suffix without "*."; regex: the RE2 pattern
  // as written (matched anchored and case-insensitively); cidr: the prefix as text.
  std::string pattern;
  std::optional<policy::cidr> network;  // for kind::cidr
  std::vector<std::uint16_t> ports;     // sorted; empty = every port (deny rules' default)
  // Allow rules: the ports whose protocol was written out, sorted by port; every other
  // listed port speaks default_protocol(port).
  std::vector<port_protocol_entry> protocols;
  bool inspect = false;  // terminate TLS for this rule (TLS inspection)
  // cidr allow rules only: the prefix may hold airlock's own or its sandboxes' addresses
  // (policy/own_addresses.hpp), and this rule means to reach them.
  bool own = false;
  // Allow rules with inspect only: what each request on the connection may ask for.
  // Empty = any. paths: decoded prefixes ("/v1/"); methods: upper-case tokens, sorted.
  std::vector<std::string> paths;
  std::vector<std::string> methods;
  source_mark mark;
};

// Hosts the client may follow a redirect to from `from` (on inspected or plain HTTP).
struct redirect_config {
  std::string from;             // canonical name
  std::vector<std::string> to;  // host patterns: exact or "*.suffix"
  source_mark mark;
};

// A header airlock adds to requests for `host` (under `path`) on inspected connections.
// `value` is the secret itself: it is never part of any message, log line or hash.
struct credential_config {
  std::string host;         // canonical exact name, covered by an allow rule with inspect
  std::string path = "/";   // decoded prefix, as for `paths:`
  std::string header;       // as written, e.g. "Authorization"
  std::string secret_file;  // absolute path, mode 0600 or stricter
  std::string value;        // the file's content without one trailing newline
  source_mark mark;
};

enum class policy_mode : std::uint8_t { enforce, audit };

struct policy_config {
  std::string name;
  policy_mode mode = policy_mode::enforce;
  std::vector<std::string> includes;  // service families, already expanded into allow/deny
  std::vector<rule_config> allow;
  std::vector<rule_config> deny;
  std::vector<redirect_config> redirects;
  std::vector<credential_config> credentials;
  // `approval: {wait: DURATION}`: a denial this policy's decide() gives for want of a rule
  // (host_not_allowed, port_not_allowed) is held up to `wait` while an approver decides
  // (record/approval_desk.hpp). None: denials stand at once.
  std::optional<std::chrono::milliseconds> approval_wait;
  source_mark mark;
};

struct session_config {
  std::string id;  // from `id:`, or the source prefix as written
  policy::cidr source;
  std::string policy;
  source_mark mark;
};

struct listen_config {
  std::vector<endpoint_config> proxy;       // transparent listener (nft REDIRECT target)
  std::vector<endpoint_config> tproxy;      // transparent listener for nft TPROXY (IP_TRANSPARENT)
  std::vector<endpoint_config> http_proxy;  // explicit CONNECT / absolute-form listener
  std::vector<endpoint_config> dns;         // UDP and TCP
  std::vector<endpoint_config> admin;       // /metrics, /healthz
  std::string control;                      // unix socket path of the control API
  std::string sandbox;                      // unix socket for `airlock run` without root
  std::string socket_group;                 // control and sandbox sockets: 0660 to this group
};

struct inspection_config {
  std::string ca_dir;                    // made by `airlock ca init DIR`
  std::vector<std::string> upstream_ca;  // trusted for upstreams besides the system store
};

// How the DNS server answers what it refuses, and how much a session may ask.
struct dns_config {
  bool deny_with_refused = false;            // false: NXDOMAIN (the name "does not exist")
  std::vector<std::uint16_t> refused_types;  // query types always refused (ANY always is)
  double queries_per_second = 200;           // per session
  double burst = 400;
  // DNS over TCP, per listener: open connections in all and per session (0: no
  // per-session cap), queries one connection may ask, and how long it may stay quiet (before,
  // between or inside queries, or not reading an answer).
  std::uint64_t tcp_connections = 256;
  std::uint64_t session_tcp_connections = 16;
  std::uint64_t tcp_queries_per_connection = 1000;
  std::chrono::milliseconds tcp_idle{10'000};
};

// What one session, and the daemon as a whole, may hold. Past a session's limit a new
// connection is denied with reason limit_exceeded (the note names the limit); at a
// daemon-wide cap the listeners stop accepting and new connections wait in the kernel's
// listen queue (daemon/instance_listeners.cpp). An open connection that spends the last of
// a byte budget is cut, and its line says so.
struct limits_config {
  std::uint64_t connections = 20000;        // open at once, the whole daemon
  std::uint64_t pending_handshakes = 2000;  // accepted, first bytes not judged yet
  // Each session's share of the two caps above (0: none): without them one sandbox's
  // silent or held connections take every place, and every other sandbox is refused
  // (limit:pending_handshakes) while it floods. A quarter each, so it takes four sessions
  // at their shares to fill the daemon. A gateway whose one (default) session covers many
  // clients raises them, or sets 0.
  std::uint64_t session_connections = 5000;        // open at once, per session
  std::uint64_t session_pending_handshakes = 500;  // accepted and not judged yet, per session
  double session_connections_per_second = 0;       // new, per session (bursts of twice that)
  std::uint64_t session_bytes_up = 0;              // over the session's life
  std::uint64_t session_bytes_down = 0;
  // Grants given through the control API and live at once (policy/session_grants.hpp):
  // a request beyond is refused (429), never made room for.
  std::uint64_t session_grants = 256;
  std::uint64_t grants = 4096;
  // Denials held for an approver at once (record/approval_desk.hpp): beyond, a denial
  // stands at once.
  std::uint64_t session_holds = 32;
  std::uint64_t holds = 256;
};

// How long a proxied connection may take at each stage. Past `peek` a connection whose
// first bytes are not judged yet is denied (reason timeout); past `connect` an upstream
// that has not answered is given up (upstream_unreachable); a relayed connection that
// moves nothing either way for `idle` is closed (note idle_timeout).
struct timeouts_config {
  std::chrono::milliseconds peek{5'000};      // from accept to a whole ClientHello or request head
  std::chrono::milliseconds connect{10'000};  // to the upstream, every address tried included
  std::chrono::milliseconds idle{600'000};    // a relayed connection with no byte either way
};

// Memory pressure (base/overload.hpp): watched only when a limit or a pressure file is set.
struct overload_config {
  std::uint64_t memory_limit = 0;  // resident bytes the daemon may use; 0: not watched
  std::string pressure_file;       // read instead of measuring: a number, 0.97 or 97% (drills, tests)
};

// The sandboxes the daemon makes for callers without root (listen.sandbox): where their
// records live and the pool their addresses come from. Empty: airlock run's defaults.
struct sandboxes_config {
  std::string state_dir;
  std::string pool;
};

struct config {
  std::string file;  // the label errors and rules name: a path, or "<embedded default>"
  listen_config listen;
  std::vector<endpoint_config> upstream_dns;  // empty: the nameservers of /etc/resolv.conf
  std::string decisions_log;                  // "-" is stdout
  // While the log cannot record (its queue full, its disk refusing writes), new connections
  // and DNS queries are refused (limit:decision_log), so nothing goes out unrecorded; false
  // (`log.when_unwritable: pass`) lets traffic go on and only counts the lost lines.
  bool refuse_when_unrecorded = true;
  dns_config dns;
  limits_config limits;
  timeouts_config timeouts;
  overload_config overload;
  std::vector<policy_config> policies;
  std::vector<session_config> sessions;
  std::optional<std::string> default_policy;  // for sources no session covers; none = deny
  // Operator floors no policy can override: always_deny beats everything, always_allow
  // beats a policy's own rules (for the gateway's own needs).
  std::vector<rule_config> always_deny;
  std::vector<rule_config> always_allow;
  inspection_config inspection;
  sandboxes_config sandboxes;
  // Event loops serving the proxy listeners, each on a thread of its own with its own
  // SO_REUSEPORT sockets; 0 (auto): one per CPU this process may run on.
  unsigned threads = 0;
};

inline constexpr unsigned max_threads = 256;

struct config_error {
  source_mark mark;
  std::string message;
  std::string to_string() const;  // "FILE:LINE:COL: message"
};

using config_result = boost::system::result<config, std::vector<config_error>>;

// Loads and validates YAML text; `file` is the label used in errors and rule marks.
config_result load_config_text(std::string_view text, const std::string& file);
// Reads `path` and loads it.
config_result load_config_file(const std::filesystem::path& path);
// The policy compiled into the binary (deploy/default-policy.yaml).
config_result load_default_config();
std::string_view default_config_text() noexcept;

inline constexpr std::string_view default_config_label = "<embedded default>";
inline constexpr std::string_view default_decisions_log = "/var/log/airlock/decisions.jsonl";

}  // namespace airlock::policy
