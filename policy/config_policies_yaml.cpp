// The policies in a config (mode:, include:, allow:, deny:, redirects:, credentials:,
// approval:), the public resolvers denied in each, and the sessions bound to them.
#include "policy/config_loader.hpp"
#include "policy/credential_yaml.hpp"
#include "policy/families.hpp"
#include "policy/rule_yaml.hpp"
#include "policy/units.hpp"

#include <algorithm>
#include <set>

namespace airlock::policy {

void config_loader::load_redirects(const YAML::Node& n, const std::string& where, std::vector<redirect_config>& out) {
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

void config_loader::include_family(const YAML::Node& n, policy_config& p) {
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

void config_loader::load_policies(const YAML::Node& n, std::vector<policy_config>& out) {
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
      r_.error(body,
               where + ": expected a mapping (mode:, include:, allow:, deny:, redirects:, credentials:, approval:)");
      continue;
    }
    r_.check_keys(body, {"mode", "include", "allow", "deny", "redirects", "credentials", "approval"}, where);
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
    if (auto a = body["approval"]) load_approval(a, where + ".approval", p);
    out.push_back(std::move(p));
  }
}

// `approval: {wait: 10s}`: how long a denial for want of a rule waits for an approver.
void config_loader::load_approval(const YAML::Node& n, const std::string& where, policy_config& p) {
  if (!n.IsMap()) return r_.error(n, where + ": expected a mapping (wait: DURATION, e.g. wait: 10s)");
  r_.check_keys(n, {"wait"}, where);
  p.approval_wait = std::chrono::seconds(10);
  const auto w = n["wait"];
  if (!w) return;
  auto parsed = parse_duration(w.IsScalar() ? w.Scalar() : std::string());
  if (!parsed.has_value()) return r_.error(w, where + ".wait: " + parsed.error());
  if (*parsed < std::chrono::milliseconds(100) || *parsed > std::chrono::minutes(10))
    return r_.error(w, where + ".wait: '" + w.Scalar() + "'; expected 100ms to 10m (a held client waits that long)");
  p.approval_wait = *parsed;
}

// Resolvers that would take DNS past airlock (DoH/DoT endpoints of the big public
// resolvers) are denied in every policy; the rules name the family file, so a denial
// says why. A policy cannot allow them: point tools at airlock's DNS instead.
void config_loader::deny_public_resolvers(std::vector<policy_config>& policies) {
  auto f = load_family("public-resolvers");
  if (!f.has_value()) {
    for (const auto& e : f.error()) r_.error_at(e.mark, "built-in family public-resolvers: " + e.message);
    return;
  }
  for (auto& p : policies) p.deny.insert(p.deny.end(), f->deny.begin(), f->deny.end());
}

void config_loader::load_sessions(const YAML::Node& n, config& cfg) {
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

}  // namespace airlock::policy
