#include "policy/rule_yaml.hpp"

#include "policy/host_port.hpp"
#include "policy/request_target.hpp"

#include <re2/re2.h>

#include <algorithm>
#include <cctype>

namespace airlock::policy::detail {

std::optional<rule_config> parse_host_pattern(yaml_reader& r, const YAML::Node& n, const std::string& where) {
  auto rule = policy::parse_host_pattern(n.IsScalar() ? n.Scalar() : std::string());
  if (!rule.has_value()) {
    r.error(n, where + ": " + rule.error());
    return std::nullopt;
  }
  rule->mark = r.mark(n);
  return std::move(*rule);
}

namespace {

bool check_regex(yaml_reader& r, const YAML::Node& n, const std::string& where, const std::string& pattern) {
  RE2::Options o;
  o.set_case_sensitive(false);
  o.set_log_errors(false);
  RE2 re(pattern, o);
  if (!re.ok()) {
    r.error(n, where + ": bad regex '" + pattern + "': " + re.error());
    return false;
  }
  if (re.ProgramSize() > max_regex_program_size) {
    r.error(n, where + ": regex '" + pattern + "' is too complex (program size " + std::to_string(re.ProgramSize()) +
                   " > " + std::to_string(max_regex_program_size) + "); split it or use '*.suffix' host rules");
    return false;
  }
  return true;
}

// `paths:` and `methods:`: what each request may ask for. They need `inspect: true`:
// without TLS termination airlock cannot see a path, and a rule must never look as if
// it restricted something it cannot see.
void parse_request_limits(yaml_reader& r, const YAML::Node& n, const std::string& where, rule_context ctx,
                          rule_config& out) {
  for (const char* key : {"paths", "methods"}) {
    const auto list = n[key];
    if (!list) continue;
    const std::string at = where + "." + key;
    if (ctx.is_deny) {
      r.error(list, at + ": only allow rules can list " + key + " (a deny rule covers the whole name)");
      continue;
    }
    if (!out.inspect) {
      r.error(list, at +
                        ": airlock sees a request's method and path only inside TLS it terminates; add 'inspect: true' "
                        "to this rule");
      continue;
    }
    if (list.IsSequence() && list.size() == 0) {
      r.error(list, at + ": empty list; leave '" + key + "' out to allow every " + (key[0] == 'p' ? "path" : "method"));
      continue;
    }
    auto& into = key[0] == 'p' ? out.paths : out.methods;
    auto one = [&](const YAML::Node& item) {
      auto text = r.string_of(item, at);
      if (!text) return;
      if (key[0] == 'p') {
        if (auto e = check_path_prefix(*text)) return r.error(item, at + ": '" + *text + "': " + *e);
      } else if (!is_method_token(*text)) {
        std::string upper = *text;
        for (auto& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
        return r.error(item, at + ": '" + *text + "': a method is an upper-case token" +
                                 (is_method_token(upper) ? "; write '" + upper + "' (methods are case-sensitive)"
                                                         : " such as GET, HEAD or POST"));
      }
      into.push_back(std::move(*text));
    };
    if (list.IsSequence()) {
      for (const auto& item : list) one(item);
    } else {
      one(list);
    }
    std::sort(into.begin(), into.end());
    into.erase(std::unique(into.begin(), into.end()), into.end());
  }
}

}  // namespace

std::optional<rule_config> parse_rule(yaml_reader& r, const YAML::Node& n, const std::string& where, rule_context ctx) {
  if (!n.IsMap()) {
    r.error(n, where + ": expected a rule mapping such as '{host: example.com}' or '{cidr: 198.51.100.0/24}'");
    return std::nullopt;
  }
  if (ctx.family_entry) r.check_keys(n, {"host", "regex", "cidr", "ports", "why"}, where);
  else r.check_keys(n, {"host", "regex", "cidr", "ports", "inspect", "paths", "methods", "own"}, where);
  const auto host = n["host"];
  const auto regex = n["regex"];
  const auto net = n["cidr"];
  if (static_cast<int>(static_cast<bool>(host)) + static_cast<bool>(regex) + static_cast<bool>(net) != 1) {
    r.error(n, where + ": a rule needs exactly one of 'host', 'regex' or 'cidr'");
    return std::nullopt;
  }
  std::optional<rule_config> out;
  if (host) {
    out = parse_host_pattern(r, host, where + ".host");
  } else if (regex) {
    const std::string text = regex.IsScalar() ? regex.Scalar() : std::string();
    if (text.empty()) {
      r.error(regex, where + ".regex: empty regex");
    } else if (check_regex(r, regex, where + ".regex", text)) {
      out = rule_config{};
      out->type = rule_config::kind::regex;
      out->pattern = text;
    }
  } else {
    const std::string text = net.IsScalar() ? net.Scalar() : std::string();
    auto parsed = cidr::parse(text);
    if (!parsed.has_value()) {
      r.error(net, where + ".cidr: " + parsed.error());
    } else {
      out = rule_config{};
      out->type = rule_config::kind::cidr;
      out->network = *parsed;
      out->pattern = parsed->to_string();
    }
  }
  if (ctx.family_entry && !n["why"]) r.error(n, where + ": every family entry needs a 'why:' line");
  if (!out) return std::nullopt;
  out->mark = r.mark(n);
  if (n["ports"]) out->ports = r.ports(n["ports"], where + ".ports", ctx.is_deny ? nullptr : &out->protocols);
  else if (!ctx.is_deny) out->ports = {80, 443};
  if (auto i = n["inspect"]) {
    const auto v = yaml_reader::scalar_text(i);
    if (v == "true") out->inspect = true;
    else if (v != "false") r.error(i, where + ".inspect: '" + v + "'; expected true or false");
    if (out->inspect && (out->type == rule_config::kind::cidr || ctx.is_deny))
      r.error(i, where + ".inspect: only allow rules for names can be inspected");
  }
  if (auto o = n["own"]) {
    const auto v = yaml_reader::scalar_text(o);
    if (v == "true") out->own = true;
    else if (v != "false") r.error(o, where + ".own: '" + v + "'; expected true or false");
    if (out->own && (out->type != rule_config::kind::cidr || ctx.is_deny))
      r.error(o, where + ".own: only cidr allow rules can reach airlock's own addresses (the gateway's, the "
                         "sandboxes', the listeners')");
  }
  if (!ctx.family_entry) parse_request_limits(r, n, where, ctx, *out);
  return out;
}

std::vector<rule_config> parse_rules(yaml_reader& r, const YAML::Node& n, const std::string& where, rule_context ctx) {
  std::vector<rule_config> out;
  if (!n.IsSequence()) {
    r.error(n, where + ": expected a list of rules");
    return out;
  }
  std::size_t i = 0;
  for (const auto& item : n)
    if (auto rule = parse_rule(r, item, where + "[" + std::to_string(i++) + "]", ctx)) out.push_back(std::move(*rule));
  return out;
}

}  // namespace airlock::policy::detail
