// The daemon's settings in a config: listen:, log:, dns:, threads:, limits:, timeouts:,
// overload:, inspection:.
#include "policy/config_loader.hpp"
#include "policy/units.hpp"

#include <cctype>
#include <charconv>

namespace airlock::policy {

void config_loader::load_listen(const YAML::Node& n, listen_config& listen) {
  if (!n.IsMap())
    return r_.error(
        n,
        "listen: expected a mapping (proxy:, tproxy:, http_proxy:, dns:, admin:, control:, sandbox:, socket_group:)");
  r_.check_keys(n, {"proxy", "tproxy", "http_proxy", "dns", "admin", "control", "sandbox", "socket_group"}, "listen");
  if (auto p = n["proxy"]) listen.proxy = r_.endpoints(p, "listen.proxy");
  if (auto p = n["tproxy"]) listen.tproxy = r_.endpoints(p, "listen.tproxy");
  if (auto p = n["http_proxy"]) listen.http_proxy = r_.endpoints(p, "listen.http_proxy");
  if (auto d = n["dns"]) listen.dns = r_.endpoints(d, "listen.dns");
  if (auto a = n["admin"]) listen.admin = r_.endpoints(a, "listen.admin");
  if (auto c = n["control"]) {
    if (auto path = r_.string_of(c, "listen.control")) {
      if (!path->starts_with("/")) r_.error(c, "listen.control: '" + *path + "': expected an absolute socket path");
      listen.control = *path;
    }
  }
  if (auto c = n["sandbox"]) {
    if (auto path = r_.string_of(c, "listen.sandbox")) {
      if (!path->starts_with("/")) r_.error(c, "listen.sandbox: '" + *path + "': expected an absolute socket path");
      else if (listen.control.empty())
        r_.error(c, "listen.sandbox needs listen.control: the sandboxes it makes register their sessions there");
      listen.sandbox = *path;
    }
  }
  if (auto g = n["socket_group"]) {
    if (auto name = r_.string_of(g, "listen.socket_group")) listen.socket_group = *name;
  }
}

void config_loader::load_sandboxes(const YAML::Node& n, sandboxes_config& out) {
  if (!n.IsMap()) return r_.error(n, "sandboxes: expected a mapping (state_dir:, pool:)");
  r_.check_keys(n, {"state_dir", "pool"}, "sandboxes");
  if (auto d = n["state_dir"])
    if (auto path = r_.string_of(d, "sandboxes.state_dir")) {
      if (!path->starts_with("/")) r_.error(d, "sandboxes.state_dir: '" + *path + "': expected an absolute path");
      out.state_dir = *path;
    }
  if (auto p = n["pool"])
    if (auto text = r_.string_of(p, "sandboxes.pool")) {
      auto c = cidr::parse(*text);
      if (!c || !c->network.is_v4())
        r_.error(p, "sandboxes.pool: '" + *text + "': expected an IPv4 prefix such as 198.18.0.0/15");
      out.pool = *text;
    }
}

void config_loader::load_log(const YAML::Node& n, config& cfg) {
  if (!n.IsMap()) return r_.error(n, "log: expected a mapping (decisions:, when_unwritable:)");
  r_.check_keys(n, {"decisions", "when_unwritable"}, "log");
  if (auto d = n["decisions"])
    if (auto path = r_.string_of(d, "log.decisions")) cfg.decisions_log = *path;
  if (auto w = n["when_unwritable"]) {
    const auto v = yaml_reader::scalar_text(w);
    if (v == "pass") cfg.refuse_when_unrecorded = false;
    else if (v != "refuse") r_.error(w, "log.when_unwritable: '" + v + "'; expected 'refuse' or 'pass'");
  }
}

void config_loader::load_dns(const YAML::Node& n, dns_config& out) {
  if (!n.IsMap())
    return r_.error(n, "dns: expected a mapping (deny_with:, refused_types:, queries_per_second:, burst:, tcp_...:)");
  r_.check_keys(n,
                {"deny_with", "refused_types", "queries_per_second", "burst", "tcp_connections",
                 "session_tcp_connections", "tcp_queries_per_connection", "tcp_idle"},
                "dns");
  if (auto d = n["deny_with"]) {
    const auto v = yaml_reader::scalar_text(d);
    if (v == "refused") out.deny_with_refused = true;
    else if (v != "nxdomain") r_.error(d, "dns.deny_with: '" + v + "'; expected 'nxdomain' or 'refused'");
  }
  if (auto t = n["refused_types"]) {
    for (const auto& name : r_.strings(t, "dns.refused_types")) {
      if (auto type = rr_type_number(name)) out.refused_types.push_back(*type);
      else
        r_.error(t, "dns.refused_types: unknown type '" + name + "'; use a name such as TXT or NULL, or TYPE<number>");
    }
  }
  auto positive = [&](const char* key, double& into) {
    if (auto v = n[key]) {
      try {
        into = v.as<double>();
        if (into > 0) return;
      } catch (const YAML::Exception&) {
      }
      r_.error(v, std::string("dns.") + key + ": expected a positive number");
    }
  };
  positive("queries_per_second", out.queries_per_second);
  positive("burst", out.burst);
  auto count = [&](const char* key, std::uint64_t& into, std::uint64_t min) {
    const auto v = n[key];
    if (!v) return;
    auto parsed = parse_count(v.IsScalar() ? v.Scalar() : std::string(), min, 1'000'000);
    if (parsed.has_value()) into = *parsed;
    else r_.error(v, std::string("dns.") + key + ": " + parsed.error());
  };
  count("tcp_connections", out.tcp_connections, 1);
  count("session_tcp_connections", out.session_tcp_connections, 0);
  count("tcp_queries_per_connection", out.tcp_queries_per_connection, 1);
  if (const auto v = n["tcp_idle"]) {
    auto parsed = parse_duration(v.IsScalar() ? v.Scalar() : std::string());
    if (parsed.has_value()) out.tcp_idle = *parsed;
    else r_.error(v, "dns.tcp_idle: " + parsed.error());
  }
}

void config_loader::load_threads(const YAML::Node& n, unsigned& out) {
  const std::string text = n.IsScalar() ? n.Scalar() : std::string();
  if (text == "auto") {
    out = 0;
    return;
  }
  auto parsed = parse_count(text, 1, max_threads);
  if (parsed.has_value()) out = static_cast<unsigned>(*parsed);
  else r_.error(n, "threads: " + parsed.error() + "; or 'auto' (one per CPU this process may use)");
}

void config_loader::load_limits(const YAML::Node& n, limits_config& out) {
  if (!n.IsMap()) return r_.error(n, "limits: expected a mapping (connections:, session_connections:, ...)");
  r_.check_keys(n,
                {"connections", "pending_handshakes", "session_connections", "session_pending_handshakes",
                 "session_connections_per_second", "session_bytes_up", "session_bytes_down", "session_grants", "grants",
                 "session_holds", "holds"},
                "limits");
  auto count = [&](const char* key, std::uint64_t& into, bool bytes) {
    const auto v = n[key];
    if (!v) return;
    const std::string text = v.IsScalar() ? v.Scalar() : std::string();
    // 0 turns a per-session limit off; the daemon-wide caps must stay above zero.
    const bool per_session = std::string_view(key).starts_with("session_");
    if (per_session && text == "0") {
      into = 0;
      return;
    }
    auto parsed = bytes ? parse_size(text) : parse_count(text, 1, std::uint64_t{1} << 32);
    if (parsed.has_value()) into = *parsed;
    else r_.error(v, std::string("limits.") + key + ": " + parsed.error());
  };
  count("connections", out.connections, false);
  count("pending_handshakes", out.pending_handshakes, false);
  count("session_connections", out.session_connections, false);
  count("session_pending_handshakes", out.session_pending_handshakes, false);
  count("session_bytes_up", out.session_bytes_up, true);
  count("session_bytes_down", out.session_bytes_down, true);
  count("session_grants", out.session_grants, false);
  count("grants", out.grants, false);
  count("session_holds", out.session_holds, false);
  count("holds", out.holds, false);
  if (auto v = n["session_connections_per_second"]) {
    try {
      out.session_connections_per_second = v.as<double>();
      if (out.session_connections_per_second >= 0) return;
    } catch (const YAML::Exception&) {
    }
    r_.error(v, "limits.session_connections_per_second: expected a number (0: no limit)");
  }
}

void config_loader::load_timeouts(const YAML::Node& n, timeouts_config& out) {
  if (!n.IsMap()) return r_.error(n, "timeouts: expected a mapping (peek:, connect:, idle:)");
  r_.check_keys(n, {"peek", "connect", "idle"}, "timeouts");
  auto duration = [&](const char* key, std::chrono::milliseconds& into) {
    const auto v = n[key];
    if (!v) return;
    auto parsed = parse_duration(v.IsScalar() ? v.Scalar() : std::string());
    if (parsed.has_value()) into = *parsed;
    else r_.error(v, std::string("timeouts.") + key + ": " + parsed.error());
  };
  duration("peek", out.peek);
  duration("connect", out.connect);
  duration("idle", out.idle);
}

void config_loader::load_overload(const YAML::Node& n, overload_config& out) {
  if (!n.IsMap()) return r_.error(n, "overload: expected a mapping (memory_limit:, pressure_file:)");
  r_.check_keys(n, {"memory_limit", "pressure_file"}, "overload");
  if (auto v = n["memory_limit"]) {
    auto parsed = parse_size(v.IsScalar() ? v.Scalar() : std::string());
    if (parsed.has_value()) out.memory_limit = *parsed;
    else r_.error(v, "overload.memory_limit: " + parsed.error());
  }
  if (auto v = n["pressure_file"]) {
    if (auto path = r_.string_of(v, "overload.pressure_file")) out.pressure_file = *path;
  }
}

// Query type names a policy may list (the common ones), or TYPE<n> for any other.
std::optional<std::uint16_t> config_loader::rr_type_number(const std::string& name) {
  static const std::pair<const char*, std::uint16_t> known[] = {
      {"A", 1},      {"NS", 2},      {"CNAME", 5}, {"SOA", 6},    {"NULL", 10},  {"PTR", 12},   {"HINFO", 13},
      {"MX", 15},    {"TXT", 16},    {"AAAA", 28}, {"SRV", 33},   {"NAPTR", 35}, {"DNAME", 39}, {"DS", 43},
      {"RRSIG", 46}, {"DNSKEY", 48}, {"SVCB", 64}, {"HTTPS", 65}, {"AXFR", 252}, {"IXFR", 251}, {"ANY", 255}};
  std::string upper = name;
  for (auto& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  for (const auto& [n, v] : known)
    if (upper == n) return v;
  if (upper.starts_with("TYPE")) {
    unsigned v = 0;
    const auto digits = std::string_view(upper).substr(4);
    auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
    if (ec == std::errc{} && end == digits.data() + digits.size() && !digits.empty() && v <= 65535)
      return static_cast<std::uint16_t>(v);
  }
  return std::nullopt;
}

void config_loader::load_inspection(const YAML::Node& n, inspection_config& out) {
  if (!n.IsMap()) return r_.error(n, "inspection: expected a mapping (ca_dir:, upstream_ca:)");
  r_.check_keys(n, {"ca_dir", "upstream_ca"}, "inspection");
  if (auto d = n["ca_dir"])
    if (auto path = r_.string_of(d, "inspection.ca_dir")) out.ca_dir = *path;
  if (auto u = n["upstream_ca"]) out.upstream_ca = r_.strings(u, "inspection.upstream_ca");
}

}  // namespace airlock::policy
