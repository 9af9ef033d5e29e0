// YAML -> config. Strict: unknown keys are errors with a "did you mean", every error
// names FILE:LINE:COL, and all errors of a file are reported at once.
#include "base/small_file.hpp"
#include "policy/config.hpp"
#include "policy/credential_yaml.hpp"
#include "policy/families.hpp"
#include "policy/rule_yaml.hpp"
#include "policy/units.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <set>

namespace airlock::policy {
namespace {

using detail::rule_context;
using detail::yaml_reader;

class loader {
 public:
  explicit loader(std::string file) : r_(std::move(file)) {}

  config_result load(std::string_view text) {
    YAML::Node root;
    try {
      root = YAML::Load(std::string(text));
    } catch (const YAML::ParserException& e) {
      r_.error_at({r_.file(), e.mark.line + 1, e.mark.column + 1}, "YAML syntax: " + e.msg);
      return r_.errors();
    }
    config cfg;
    cfg.file = r_.file();
    cfg.decisions_log = std::string(default_decisions_log);
    if (!root.IsMap()) {
      r_.error(root, "expected a mapping with 'version: 1' at the top of the file");
      return r_.errors();
    }
    r_.check_keys(root,
                  {"version", "listen", "upstream_dns", "dns", "limits", "timeouts", "overload", "log", "policies",
                   "sessions", "default_policy", "always_deny", "always_allow", "inspection", "threads"},
                  "the top level");
    if (auto v = root["version"]; !v) {
      r_.error_at({r_.file(), 1, 1}, "missing 'version: 1' (the schema version this file is written for)");
    } else if (!v.IsScalar() || v.Scalar() != "1") {
      r_.error(v, "unsupported version '" + yaml_reader::scalar_text(v) + "': this airlock reads version 1");
    }
    if (auto n = root["listen"]) load_listen(n, cfg.listen);
    if (auto n = root["upstream_dns"]) cfg.upstream_dns = r_.endpoints(n, "upstream_dns", 53);
    if (auto n = root["log"]) load_log(n, cfg);
    if (auto n = root["dns"]) load_dns(n, cfg.dns);
    if (auto n = root["limits"]) load_limits(n, cfg.limits);
    if (auto n = root["timeouts"]) load_timeouts(n, cfg.timeouts);
    if (auto n = root["overload"]) load_overload(n, cfg.overload);
    if (auto n = root["threads"]) load_threads(n, cfg.threads);
    if (auto n = root["inspection"]) load_inspection(n, cfg.inspection);
    if (auto n = root["always_deny"]) cfg.always_deny = detail::parse_rules(r_, n, "always_deny", {true, false});
    if (auto n = root["always_allow"]) cfg.always_allow = detail::parse_rules(r_, n, "always_allow", {false, false});
    if (auto n = root["policies"]) load_policies(n, cfg.policies);
    deny_public_resolvers(cfg.policies);
    if (auto n = root["sessions"]) load_sessions(n, cfg);
    if (auto n = root["default_policy"]) {
      if (auto name = r_.string_of(n, "default_policy")) {
        if (!find(cfg, *name))
          r_.error(n, "default_policy '" + *name + "' is not defined under policies:" + known(cfg));
        cfg.default_policy = *name;
      }
    }
    for (const auto& p : cfg.policies)
      for (const auto& rule : p.allow)
        if (rule.inspect && cfg.inspection.ca_dir.empty())
          r_.error_at(rule.mark, "policies." + p.name +
                                     ": 'inspect: true' needs inspection.ca_dir (made by 'airlock ca init DIR')");
    if (!r_.errors().empty()) return r_.errors();
    return cfg;
  }

 private:
  void load_listen(const YAML::Node& n, listen_config& listen) {
    if (!n.IsMap())
      return r_.error(n, "listen: expected a mapping (proxy:, tproxy:, http_proxy:, dns:, admin:, control:)");
    r_.check_keys(n, {"proxy", "tproxy", "http_proxy", "dns", "admin", "control"}, "listen");
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
  }

  void load_log(const YAML::Node& n, config& cfg) {
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

  void load_dns(const YAML::Node& n, dns_config& out) {
    if (!n.IsMap())
      return r_.error(n, "dns: expected a mapping (deny_with:, refused_types:, queries_per_second:, burst:)");
    r_.check_keys(n, {"deny_with", "refused_types", "queries_per_second", "burst"}, "dns");
    if (auto d = n["deny_with"]) {
      const auto v = yaml_reader::scalar_text(d);
      if (v == "refused") out.deny_with_refused = true;
      else if (v != "nxdomain") r_.error(d, "dns.deny_with: '" + v + "'; expected 'nxdomain' or 'refused'");
    }
    if (auto t = n["refused_types"]) {
      for (const auto& name : r_.strings(t, "dns.refused_types")) {
        if (auto type = rr_type_number(name)) out.refused_types.push_back(*type);
        else
          r_.error(t,
                   "dns.refused_types: unknown type '" + name + "'; use a name such as TXT or NULL, or TYPE<number>");
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
  }

  void load_threads(const YAML::Node& n, unsigned& out) {
    const std::string text = n.IsScalar() ? n.Scalar() : std::string();
    if (text == "auto") {
      out = 0;
      return;
    }
    auto parsed = parse_count(text, 1, max_threads);
    if (parsed.has_value()) out = static_cast<unsigned>(*parsed);
    else r_.error(n, "threads: " + parsed.error() + "; or 'auto' (one per CPU this process may use)");
  }

  void load_limits(const YAML::Node& n, limits_config& out) {
    if (!n.IsMap()) return r_.error(n, "limits: expected a mapping (connections:, session_connections:, ...)");
    r_.check_keys(n,
                  {"connections", "pending_handshakes", "session_connections", "session_pending_handshakes",
                   "session_connections_per_second", "session_bytes_up", "session_bytes_down"},
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
    if (auto v = n["session_connections_per_second"]) {
      try {
        out.session_connections_per_second = v.as<double>();
        if (out.session_connections_per_second >= 0) return;
      } catch (const YAML::Exception&) {
      }
      r_.error(v, "limits.session_connections_per_second: expected a number (0: no limit)");
    }
  }

  void load_timeouts(const YAML::Node& n, timeouts_config& out) {
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

  void load_overload(const YAML::Node& n, overload_config& out) {
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
  static std::optional<std::uint16_t> rr_type_number(const std::string& name) {
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

  void load_inspection(const YAML::Node& n, inspection_config& out) {
    if (!n.IsMap()) return r_.error(n, "inspection: expected a mapping (ca_dir:, upstream_ca:)");
    r_.check_keys(n, {"ca_dir", "upstream_ca"}, "inspection");
    if (auto d = n["ca_dir"])
      if (auto path = r_.string_of(d, "inspection.ca_dir")) out.ca_dir = *path;
    if (auto u = n["upstream_ca"]) out.upstream_ca = r_.strings(u, "inspection.upstream_ca");
  }

  void load_redirects(const YAML::Node& n, const std::string& where, std::vector<redirect_config>& out) {
    if (!n.IsSequence()) return r_.error(n, where + ": expected a list of {from: HOST, to: [HOST...]}");
    std::size_t i = 0;
    for (const auto& item : n) {
      const std::string at = where + "[" + std::to_string(i++) + "]";
      if (!item.IsMap()) {
        r_.error(item, at + ": expected {from: HOST, to: [HOST...]}");
        continue;
      }
      r_.check_keys(item, {"from", "to"}, at);
      if (!item["from"] || !item["to"]) {
        r_.error(item, at + ": needs both 'from' (a host) and 'to' (hosts it may redirect to)");
        continue;
      }
      redirect_config rc;
      rc.mark = r_.mark(item);
      auto from = detail::parse_host_pattern(r_, item["from"], at + ".from");
      if (from && from->type != rule_config::kind::host)
        r_.error(item["from"], at + ".from: a redirect starts at one exact host");
      if (from) rc.from = from->pattern;
      const auto to = item["to"];
      std::size_t j = 0;
      auto add_to = [&](const YAML::Node& t) {
        if (auto p = detail::parse_host_pattern(r_, t, at + ".to[" + std::to_string(j++) + "]"))
          rc.to.push_back((p->type == rule_config::kind::wildcard ? "*." : "") + p->pattern);
      };
      if (to.IsSequence()) {
        for (const auto& t : to) add_to(t);
      } else {
        add_to(to);
      }
      out.push_back(std::move(rc));
    }
  }

  void include_family(const YAML::Node& n, policy_config& p) {
    const auto name = yaml_reader::scalar_text(n);
    auto f = load_family(name);
    if (!f.has_value()) {
      for (const auto& e : f.error())
        r_.error(n, "policies." + p.name + ".include: " + (e.mark.file.empty() ? e.message : e.to_string()));
      return;
    }
    p.includes.push_back(name);
    p.allow.insert(p.allow.end(), f->allow.begin(), f->allow.end());
    p.deny.insert(p.deny.end(), f->deny.begin(), f->deny.end());
  }

  void load_policies(const YAML::Node& n, std::vector<policy_config>& out) {
    if (!n.IsMap()) return r_.error(n, "policies: expected a mapping of policy names to policies");
    std::set<std::string> names;
    for (const auto& kv : n) {
      const std::string name = kv.first.IsScalar() ? kv.first.Scalar() : std::string();
      const std::string where = "policies." + name;
      if (name.empty() || !std::all_of(name.begin(), name.end(), [](char c) {
            return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
          })) {
        r_.error(kv.first, "policy name '" + name + "': use lowercase letters, digits, '-' and '_'");
        continue;
      }
      if (!names.insert(name).second) {
        r_.error(kv.first, "duplicate policy '" + name + "'; each policy name must be unique");
        continue;
      }
      const auto& body = kv.second;
      if (!body.IsMap()) {
        r_.error(body, where + ": expected a mapping (mode:, include:, allow:, deny:, redirects:, credentials:)");
        continue;
      }
      r_.check_keys(body, {"mode", "include", "allow", "deny", "redirects", "credentials"}, where);
      policy_config p;
      p.name = name;
      p.mark = r_.mark(kv.first);
      if (auto m = body["mode"]) {
        const std::string mode = yaml_reader::scalar_text(m);
        if (mode == "enforce") p.mode = policy_mode::enforce;
        else if (mode == "audit") p.mode = policy_mode::audit;
        else r_.error(m, where + ".mode: '" + mode + "'; expected 'enforce' or 'audit'");
      }
      if (auto a = body["allow"]) p.allow = detail::parse_rules(r_, a, where + ".allow", {false, false});
      if (auto d = body["deny"]) p.deny = detail::parse_rules(r_, d, where + ".deny", {true, false});
      if (auto inc = body["include"]) {
        if (inc.IsSequence()) {
          for (const auto& item : inc) include_family(item, p);
        } else {
          include_family(inc, p);
        }
      }
      if (auto rd = body["redirects"]) load_redirects(rd, where + ".redirects", p.redirects);
      if (auto c = body["credentials"]) p.credentials = detail::parse_credentials(r_, c, where + ".credentials", p);
      out.push_back(std::move(p));
    }
  }

  // Resolvers that would take DNS past airlock (DoH/DoT endpoints of the big public
  // resolvers) are denied in every policy; the rules name the family file, so a denial
  // says why. A policy cannot allow them: point tools at airlock's DNS instead.
  void deny_public_resolvers(std::vector<policy_config>& policies) {
    auto f = load_family("public-resolvers");
    if (!f.has_value()) {
      for (const auto& e : f.error()) r_.error_at(e.mark, "built-in family public-resolvers: " + e.message);
      return;
    }
    for (auto& p : policies) p.deny.insert(p.deny.end(), f->deny.begin(), f->deny.end());
  }

  static const policy_config* find(const config& cfg, const std::string& name) {
    for (const auto& p : cfg.policies)
      if (p.name == name) return &p;
    return nullptr;
  }

  static std::string known(const config& cfg) {
    std::string out;
    for (const auto& p : cfg.policies) out += (out.empty() ? " (defined: " : ", ") + p.name;
    return out.empty() ? " (none are defined)" : out + ")";
  }

  void load_sessions(const YAML::Node& n, config& cfg) {
    if (!n.IsSequence()) return r_.error(n, "sessions: expected a list of {source: CIDR, policy: NAME}");
    std::size_t i = 0;
    for (const auto& item : n) {
      const std::string where = "sessions[" + std::to_string(i++) + "]";
      if (!item.IsMap()) {
        r_.error(item, where + ": expected {source: CIDR, policy: NAME}");
        continue;
      }
      r_.check_keys(item, {"id", "source", "policy"}, where);
      session_config s;
      s.mark = r_.mark(item);
      auto source = item["source"];
      auto policy = item["policy"];
      if (!source || !policy) {
        r_.error(item, where + ": needs both 'source' (a CIDR) and 'policy' (a policy name)");
        continue;
      }
      auto parsed = cidr::parse(yaml_reader::scalar_text(source));
      if (!parsed.has_value()) {
        r_.error(source, where + ".source: " + parsed.error());
        continue;
      }
      s.source = *parsed;
      s.policy = yaml_reader::scalar_text(policy);
      if (!find(cfg, s.policy)) {
        r_.error(policy, where + ".policy: '" + s.policy + "' is not defined under policies:" + known(cfg));
        continue;
      }
      if (auto id = item["id"]) {
        if (auto text = r_.string_of(id, where + ".id")) s.id = *text;
      } else {
        s.id = s.source.to_string();
      }
      for (const auto& other : cfg.sessions)
        if (other.source == s.source)
          r_.error(source, where + ".source: " + s.source.to_string() + " is already bound at line " +
                               std::to_string(other.mark.line));
      cfg.sessions.push_back(std::move(s));
    }
  }

  yaml_reader r_;
};

}  // namespace

config_result load_config_text(std::string_view text, const std::string& file) {
  try {
    return loader(file).load(text);
  } catch (const std::exception& e) {  // yaml-cpp's conversions; report, never crash
    return std::vector<config_error>{{{file, 1, 1}, std::string("could not read the configuration: ") + e.what()}};
  }
}

config_result load_config_file(const std::filesystem::path& path) {
  const auto text = base::read_file(path);
  if (!text)
    return std::vector<config_error>{
        {{path.string(), 0, 0}, "cannot open the file (does it exist and is it readable?)"}};
  return load_config_text(*text, path.string());
}

}  // namespace airlock::policy
