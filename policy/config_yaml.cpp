// YAML -> config. Strict: unknown keys are errors with a "did you mean", every error
// names FILE:LINE:COL, and all errors of a file are reported at once.
#include "policy/config.hpp"
#include "policy/domain_name.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <fstream>
#include <initializer_list>
#include <set>
#include <sstream>

namespace airlock::policy {

std::string source_mark::to_string() const { return file + ":" + std::to_string(line); }

std::string config_error::to_string() const {
  if (mark.line == 0) return mark.file + ": " + message;
  return mark.file + ":" + std::to_string(mark.line) + ":" + std::to_string(mark.column) + ": " + message;
}

namespace {

// Optimal string alignment distance: a swapped pair of letters ("hots") counts as one
// edit, so the suggestion is the key the user meant, not another two edits away.
std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::vector<std::size_t>> d(a.size() + 1, std::vector<std::size_t>(b.size() + 1));
  for (std::size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (std::size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.size()][b.size()];
}

using keys = std::initializer_list<std::string_view>;

std::string join(keys ks) {
  std::string out;
  for (auto k : ks) out += (out.empty() ? "" : ", ") + std::string(k);
  return out;
}

class loader {
 public:
  explicit loader(std::string file) : file_(std::move(file)) {}

  config_result load(std::string_view text) {
    YAML::Node root;
    try {
      root = YAML::Load(std::string(text));
    } catch (const YAML::ParserException& e) {
      errors_.push_back({{file_, e.mark.line + 1, e.mark.column + 1}, "YAML syntax: " + e.msg});
      return errors_;
    }
    config cfg;
    cfg.file = file_;
    cfg.decisions_log = std::string(default_decisions_log);
    if (!root.IsMap()) {
      error(root, "expected a mapping with 'version: 1' at the top of the file");
      return errors_;
    }
    check_keys(root, {"version", "listen", "upstream_dns", "log", "policies", "sessions", "default_policy"},
               "the top level");
    if (auto v = root["version"]; !v) {
      errors_.push_back({{file_, 1, 1}, "missing 'version: 1' (the schema version this file is written for)"});
    } else if (!v.IsScalar() || v.Scalar() != "1") {
      error(v, "unsupported version '" + scalar_text(v) + "': this airlock reads version 1");
    }
    if (auto n = root["listen"]) load_listen(n, cfg.listen);
    if (auto n = root["upstream_dns"]) cfg.upstream_dns = endpoints(n, "upstream_dns", 53);
    if (auto n = root["log"]) load_log(n, cfg);
    if (auto n = root["policies"]) load_policies(n, cfg.policies);
    if (auto n = root["sessions"]) load_sessions(n, cfg);
    if (auto n = root["default_policy"]) {
      if (auto name = string_of(n, "default_policy")) {
        if (!has_policy(cfg, *name)) error(n, "default_policy '" + *name + "' is not defined under policies:" + known_policies(cfg));
        cfg.default_policy = *name;
      }
    }
    if (!errors_.empty()) return errors_;
    return cfg;
  }

 private:
  source_mark mark(const YAML::Node& n) const {
    auto m = n.Mark();
    if (m.line < 0) return {file_, 1, 1};
    return {file_, m.line + 1, m.column + 1};
  }

  void error(const YAML::Node& n, std::string message) { errors_.push_back({mark(n), std::move(message)}); }

  static std::string scalar_text(const YAML::Node& n) { return n.IsScalar() ? n.Scalar() : std::string("<not a scalar>"); }

  void check_keys(const YAML::Node& map, keys allowed, std::string_view where) {
    std::set<std::string> seen;
    for (const auto& kv : map) {
      const std::string key = kv.first.IsScalar() ? kv.first.Scalar() : std::string();
      if (!seen.insert(key).second) {
        error(kv.first, "duplicate key '" + key + "' in " + std::string(where));
        continue;
      }
      if (std::find(allowed.begin(), allowed.end(), key) != allowed.end()) continue;
      std::string_view best;
      std::size_t best_distance = key.size() / 3 + 1;
      for (auto k : allowed) {
        auto d = edit_distance(key, k);
        if (d < best_distance || (d == best_distance && best.empty())) best = k, best_distance = d;
      }
      std::string message = "unknown key '" + key + "' in " + std::string(where);
      message += best.empty() ? "; expected one of: " + join(allowed) : "; did you mean '" + std::string(best) + "'?";
      error(kv.first, message);
    }
  }

  std::optional<std::string> string_of(const YAML::Node& n, std::string_view what) {
    if (!n.IsScalar() || n.Scalar().empty()) {
      error(n, std::string(what) + ": expected a non-empty string");
      return std::nullopt;
    }
    return n.Scalar();
  }

  // A scalar or a list of scalars, each ADDRESS:PORT (a bare address takes default_port).
  std::vector<endpoint_config> endpoints(const YAML::Node& n, std::string_view what, int default_port = -1) {
    std::vector<endpoint_config> out;
    auto one = [&](const YAML::Node& item) {
      if (!item.IsScalar()) return error(item, std::string(what) + ": expected ADDRESS:PORT or a list of them");
      std::string text = item.Scalar();
      if (default_port >= 0 && cidr::parse(text).has_value() && text.find('/') == std::string::npos)
        text = (text.find(':') != std::string::npos ? "[" + text + "]" : text) + ":" + std::to_string(default_port);
      auto ep = endpoint_config::parse(text);
      if (!ep.has_value()) return error(item, std::string(what) + ": " + ep.error());
      out.push_back(*ep);
    };
    if (n.IsSequence()) {
      for (const auto& item : n) one(item);
    } else {
      one(n);
    }
    return out;
  }

  void load_listen(const YAML::Node& n, listen_config& listen) {
    if (!n.IsMap()) return error(n, "listen: expected a mapping (proxy:, dns:)");
    check_keys(n, {"proxy", "dns"}, "listen");
    if (auto p = n["proxy"]) listen.proxy = endpoints(p, "listen.proxy");
    if (auto d = n["dns"]) listen.dns = endpoints(d, "listen.dns");
  }

  void load_log(const YAML::Node& n, config& cfg) {
    if (!n.IsMap()) return error(n, "log: expected a mapping (decisions:)");
    check_keys(n, {"decisions"}, "log");
    if (auto d = n["decisions"])
      if (auto path = string_of(d, "log.decisions")) cfg.decisions_log = *path;
  }

  std::vector<std::uint16_t> ports(const YAML::Node& n, std::string_view where) {
    std::vector<std::uint16_t> out;
    auto one = [&](const YAML::Node& item) {
      unsigned value = 0;
      const std::string text = item.IsScalar() ? item.Scalar() : std::string();
      auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
      if (ec != std::errc{} || end != text.data() + text.size() || text.empty() || value < 1 || value > 65535)
        return error(item, std::string(where) + ": bad port '" + scalar_text(item) + "'; expected a number 1..65535");
      out.push_back(static_cast<std::uint16_t>(value));
    };
    if (n.IsSequence()) {
      for (const auto& item : n) one(item);
      if (n.size() == 0) error(n, std::string(where) + ": empty port list; leave 'ports' out for [80, 443]");
    } else {
      one(n);
    }
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
  }

  // Allow rules default to ports 80 and 443; deny rules to every port (an empty list).
  std::optional<rule_config> rule(const YAML::Node& n, const std::string& where, bool is_deny) {
    if (!n.IsMap()) {
      error(n, where + ": expected a rule mapping such as '{host: example.com}' or '{cidr: 198.51.100.0/24}'");
      return std::nullopt;
    }
    check_keys(n, {"host", "cidr", "ports"}, where);
    rule_config r;
    r.mark = mark(n);
    const auto host = n["host"];
    const auto net = n["cidr"];
    if (static_cast<bool>(host) == static_cast<bool>(net)) {
      error(n, where + ": a rule needs exactly one of 'host' or 'cidr'");
      return std::nullopt;
    }
    if (host) {
      const std::string text = host.IsScalar() ? host.Scalar() : std::string();
      if (text.empty()) {
        error(host, where + ".host: empty host; write a name such as 'example.com' or '*.example.com'");
        return std::nullopt;
      }
      std::string_view name = text;
      r.type = rule_config::kind::host;
      if (name.starts_with("*.")) {
        r.type = rule_config::kind::wildcard;
        name.remove_prefix(2);
      }
      if (name.find('*') != std::string_view::npos) {
        error(host, where + ".host: wildcard in the wrong place in '" + text +
                        "'; only a leading '*.' is allowed (it matches subdomains at any depth), e.g. '*.example.com'");
        return std::nullopt;
      }
      if (is_ip_literal(name)) {
        error(host, where + ".host: '" + text + "' is an address; write 'cidr: " + text + "' instead");
        return std::nullopt;
      }
      auto canonical = domain_name::parse(name);
      if (!canonical.has_value()) {
        error(host, where + ".host: '" + text + "': " + std::string(to_string(canonical.error())));
        return std::nullopt;
      }
      r.pattern = canonical->str();
    } else {
      const std::string text = net.IsScalar() ? net.Scalar() : std::string();
      auto parsed = cidr::parse(text);
      if (!parsed.has_value()) {
        error(net, where + ".cidr: " + parsed.error());
        return std::nullopt;
      }
      r.type = rule_config::kind::cidr;
      r.network = *parsed;
      r.pattern = parsed->to_string();
    }
    if (n["ports"]) r.ports = ports(n["ports"], where + ".ports");
    else if (!is_deny) r.ports = {80, 443};
    return r;
  }

  std::vector<rule_config> rules(const YAML::Node& n, const std::string& where, bool is_deny) {
    std::vector<rule_config> out;
    if (!n.IsSequence()) {
      error(n, where + ": expected a list of rules");
      return out;
    }
    std::size_t i = 0;
    for (const auto& item : n)
      if (auto r = rule(item, where + "[" + std::to_string(i++) + "]", is_deny)) out.push_back(std::move(*r));
    return out;
  }

  void load_policies(const YAML::Node& n, std::vector<policy_config>& out) {
    if (!n.IsMap()) return error(n, "policies: expected a mapping of policy names to policies");
    std::set<std::string> names;
    for (const auto& kv : n) {
      const std::string name = kv.first.IsScalar() ? kv.first.Scalar() : std::string();
      const std::string where = "policies." + name;
      if (name.empty() || !std::all_of(name.begin(), name.end(), [](char c) {
            return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
          })) {
        error(kv.first, "policy name '" + name + "': use lowercase letters, digits, '-' and '_'");
        continue;
      }
      if (!names.insert(name).second) {
        error(kv.first, "duplicate policy '" + name + "'; each policy name must be unique");
        continue;
      }
      const auto& body = kv.second;
      if (!body.IsMap()) {
        error(body, where + ": expected a mapping (mode:, allow:, deny:)");
        continue;
      }
      check_keys(body, {"mode", "allow", "deny"}, where);
      policy_config p;
      p.name = name;
      p.mark = mark(kv.first);
      if (auto m = body["mode"]) {
        const std::string mode = scalar_text(m);
        if (mode == "enforce") p.mode = policy_mode::enforce;
        else if (mode == "audit") p.mode = policy_mode::audit;
        else error(m, where + ".mode: '" + mode + "'; expected 'enforce' or 'audit'");
      }
      if (auto a = body["allow"]) p.allow = rules(a, where + ".allow", false);
      if (auto d = body["deny"]) p.deny = rules(d, where + ".deny", true);
      out.push_back(std::move(p));
    }
  }

  static bool has_policy(const config& cfg, const std::string& name) {
    return std::any_of(cfg.policies.begin(), cfg.policies.end(), [&](const auto& p) { return p.name == name; });
  }

  static std::string known_policies(const config& cfg) {
    std::string out;
    for (const auto& p : cfg.policies) out += (out.empty() ? " (defined: " : ", ") + p.name;
    return out.empty() ? " (none are defined)" : out + ")";
  }

  void load_sessions(const YAML::Node& n, config& cfg) {
    if (!n.IsSequence()) return error(n, "sessions: expected a list of {source: CIDR, policy: NAME}");
    std::size_t i = 0;
    for (const auto& item : n) {
      const std::string where = "sessions[" + std::to_string(i++) + "]";
      if (!item.IsMap()) {
        error(item, where + ": expected {source: CIDR, policy: NAME}");
        continue;
      }
      check_keys(item, {"id", "source", "policy"}, where);
      session_config s;
      s.mark = mark(item);
      auto source = item["source"];
      auto policy = item["policy"];
      if (!source || !policy) {
        error(item, where + ": needs both 'source' (a CIDR) and 'policy' (a policy name)");
        continue;
      }
      auto parsed = cidr::parse(scalar_text(source));
      if (!parsed.has_value()) {
        error(source, where + ".source: " + parsed.error());
        continue;
      }
      s.source = *parsed;
      s.policy = scalar_text(policy);
      if (!has_policy(cfg, s.policy)) {
        error(policy, where + ".policy: '" + s.policy + "' is not defined under policies:" + known_policies(cfg));
        continue;
      }
      if (auto id = item["id"]) {
        if (auto text = string_of(id, where + ".id")) s.id = *text;
      } else {
        s.id = s.source.to_string();
      }
      for (const auto& other : cfg.sessions)
        if (other.source == s.source)
          error(source, where + ".source: " + s.source.to_string() + " is already bound at line " +
                            std::to_string(other.mark.line));
      cfg.sessions.push_back(std::move(s));
    }
  }

  std::string file_;
  std::vector<config_error> errors_;
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
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return std::vector<config_error>{{{path.string(), 0, 0}, "cannot open the file (does it exist and is it readable?)"}};
  std::ostringstream text;
  text << in.rdbuf();
  return load_config_text(text.str(), path.string());
}

}  // namespace airlock::policy
