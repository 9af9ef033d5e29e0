// YAML -> config. Strict: unknown keys are errors with a "did you mean", every error
// names FILE:LINE:COL, and all errors of a file are reported at once.
#include "base/small_file.hpp"
#include "policy/config.hpp"
#include "policy/config_loader.hpp"
#include "policy/rule_yaml.hpp"

namespace airlock::policy {

config_result config_loader::load(std::string_view text) {
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
                 "sessions", "default_policy", "always_deny", "always_allow", "inspection", "threads", "sandboxes"},
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
  if (auto n = root["sandboxes"]) load_sandboxes(n, cfg.sandboxes);
  if (auto n = root["always_deny"]) cfg.always_deny = detail::parse_rules(r_, n, "always_deny", {true, false});
  if (auto n = root["always_allow"]) cfg.always_allow = detail::parse_rules(r_, n, "always_allow", {false, false});
  if (auto n = root["policies"]) load_policies(n, cfg.policies);
  deny_public_resolvers(cfg.policies);
  if (auto n = root["sessions"]) load_sessions(n, cfg);
  if (auto n = root["default_policy"]) {
    if (auto name = r_.string_of(n, "default_policy")) {
      if (!find(cfg, *name)) r_.error(n, "default_policy '" + *name + "' is not defined under policies:" + known(cfg));
      cfg.default_policy = *name;
    }
  }
  for (const auto& p : cfg.policies)
    for (const auto& rule : p.allow)
      if (rule.inspect && cfg.inspection.ca_dir.empty())
        r_.error_at(rule.mark,
                    "policies." + p.name + ": 'inspect: true' needs inspection.ca_dir (made by 'airlock ca init DIR')");
  if (!r_.errors().empty()) return r_.errors();
  return cfg;
}

const policy_config* config_loader::find(const config& cfg, const std::string& name) {
  for (const auto& p : cfg.policies)
    if (p.name == name) return &p;
  return nullptr;
}

std::string config_loader::known(const config& cfg) {
  std::string out;
  for (const auto& p : cfg.policies) out += (out.empty() ? " (defined: " : ", ") + p.name;
  return out.empty() ? " (none are defined)" : out + ")";
}

config_result load_config_text(std::string_view text, const std::string& file) {
  try {
    return config_loader(file).load(text);
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
