#include "policy/snapshot.hpp"

#include "policy/special_addresses.hpp"

#include <algorithm>
#include <cstdio>

namespace airlock::policy {

compiled_policy::compiled_policy(std::string name, policy_mode mode, std::shared_ptr<const floors> floor)
    : name_(std::move(name)), mode_(mode), floor_(std::move(floor)) {}

std::optional<std::string> compiled_policy::build(const policy_config& cfg) {
  if (auto e = allow_.build(cfg.allow)) return "policies." + name_ + ".allow: " + *e;
  if (auto e = deny_.build(cfg.deny)) return "policies." + name_ + ".deny: " + *e;
  return std::nullopt;
}

decision compiled_policy::soften(decision d) const noexcept {
  if (d.verdict == verdict::deny && mode_ == policy_mode::audit) d.verdict = verdict::audit_deny;
  return d;
}

namespace {

// A DNS query (any_port) is refused only by a deny rule that covers every port: a name
// denied on port 22 alone must still resolve for 443.
bool deny_applies(const compiled_rule& r, std::uint16_t port) {
  return port == any_port ? r.ports.empty() : r.covers(port);
}

const compiled_rule* first_deny(const rule_index& idx, std::string_view name, std::uint16_t port) {
  const compiled_rule* hit = nullptr;
  idx.for_each_name_match(name, [&](const compiled_rule& r) {
    if (!hit && deny_applies(r, port)) hit = &r;
  });
  return hit;
}

}  // namespace

decision compiled_policy::decide(const domain_name& name, std::uint16_t port) const noexcept {
  // 1. Operator floors: always_deny is never softened by audit mode.
  if (const auto* r = first_deny(floor_->deny, name.str(), port)) return {verdict::deny, reason::host_denied, r->origin};
  const compiled_rule* floor_allowed = nullptr;
  floor_->allow.for_each_name_match(name.str(), [&](const compiled_rule& r) {
    if (!floor_allowed && r.covers(port)) floor_allowed = &r;
  });
  if (floor_allowed) return {verdict::allow, reason::host_allowed, floor_allowed->origin, floor_allowed->inspect};

  // 2. The policy: deny beats allow.
  if (const auto* r = first_deny(deny_, name.str(), port)) return soften({verdict::deny, reason::host_denied, r->origin});
  const compiled_rule* allowed = nullptr;
  const compiled_rule* other_port = nullptr;
  allow_.for_each_name_match(name.str(), [&](const compiled_rule& r) {
    if (r.covers(port)) {
      if (!allowed) allowed = &r;
    } else if (!other_port) {
      other_port = &r;
    }
  });
  if (allowed) return {verdict::allow, reason::host_allowed, allowed->origin, allowed->inspect};
  if (other_port) return soften({verdict::deny, reason::port_not_allowed, other_port->origin});
  return soften({verdict::deny, reason::host_not_allowed, "default"});
}

const std::string* compiled_policy::cidr_allowance(const boost::asio::ip::address& address,
                                                   std::uint16_t port) const noexcept {
  const std::string* denied = nullptr;
  auto deny = [&](const compiled_rule& r) {
    if (!denied && r.covers(port)) denied = &r.origin;
  };
  floor_->deny.for_each_address_match(address, deny);
  deny_.for_each_address_match(address, deny);
  if (denied) return nullptr;
  const std::string* allowed = nullptr;
  auto allow = [&](const compiled_rule& r) {
    if (!allowed && r.covers(port)) allowed = &r.origin;
  };
  floor_->allow.for_each_address_match(address, allow);
  allow_.for_each_address_match(address, allow);
  return allowed;
}

decision compiled_policy::decide(const boost::asio::ip::address& address, std::uint16_t port) const noexcept {
  const compiled_rule* hit = nullptr;
  auto first = [&](const compiled_rule& r) {
    if (!hit && r.covers(port)) hit = &r;
  };
  floor_->deny.for_each_address_match(address, first);
  if (hit) return {verdict::deny, reason::host_denied, hit->origin};
  floor_->allow.for_each_address_match(address, first);
  if (hit) return {verdict::allow, reason::cidr_allowed, hit->origin};
  deny_.for_each_address_match(address, first);
  if (hit) return soften({verdict::deny, reason::host_denied, hit->origin});
  allow_.for_each_address_match(address, first);
  if (hit) return {verdict::allow, reason::cidr_allowed, hit->origin};
  // Special addresses are a floor too: audit mode never opens them.
  if (is_special(classify(address))) return {verdict::deny, reason::private_address, "default"};
  return soften({verdict::deny, reason::no_name, "default"});
}

namespace {

// FNV-1a: identifies a policy in logs; not a security boundary.
struct fnv1a {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  void add(std::string_view s) {
    for (char c : s) h = (h ^ static_cast<unsigned char>(c)) * 0x100000001b3ULL;
    h = (h ^ 0xff) * 0x100000001b3ULL;  // separator, so ("ab","c") != ("a","bc")
  }
  std::string hex() const {
    char out[17];
    std::snprintf(out, sizeof out, "%016llx", static_cast<unsigned long long>(h));
    return out;
  }
};

void hash_rules(fnv1a& h, std::string_view kind, const std::vector<rule_config>& rules) {
  for (const auto& r : rules) {
    h.add(kind);
    h.add(std::to_string(static_cast<int>(r.type)));
    h.add(r.pattern);
    for (auto p : r.ports) h.add(std::to_string(p));
    h.add(r.inspect ? "inspect" : "");
    h.add(r.mark.to_string());  // the rule a decision names is part of what it says
  }
}

}  // namespace

boost::system::result<std::shared_ptr<const snapshot>, std::vector<config_error>> snapshot::compile(const config& cfg) {
  using failure = std::vector<config_error>;
  auto s = std::shared_ptr<snapshot>(new snapshot());
  fnv1a h;
  auto floor = std::make_shared<floors>();
  if (auto e = floor->deny.build(cfg.always_deny)) return failure{{{cfg.file, 0, 0}, "always_deny: " + *e}};
  if (auto e = floor->allow.build(cfg.always_allow)) return failure{{{cfg.file, 0, 0}, "always_allow: " + *e}};
  // The dns: settings change DNS decisions (refused types, the rate) and so the version.
  h.add(cfg.dns.deny_with_refused ? "refused" : "nxdomain");
  for (auto t : cfg.dns.refused_types) h.add(std::to_string(t));
  h.add(std::to_string(cfg.dns.queries_per_second) + "/" + std::to_string(cfg.dns.burst));
  hash_rules(h, "always_deny", cfg.always_deny);
  hash_rules(h, "always_allow", cfg.always_allow);
  s->rule_count_ = cfg.always_deny.size() + cfg.always_allow.size();
  for (const auto& p : cfg.policies) {
    auto compiled = std::make_unique<compiled_policy>(p.name, p.mode, floor);
    if (auto e = compiled->build(p)) return failure{{p.mark, *e}};
    s->policies_.push_back(std::move(compiled));
    s->rule_count_ += p.allow.size() + p.deny.size();
    h.add("policy");
    h.add(p.name);
    h.add(p.mode == policy_mode::audit ? "audit" : "enforce");
    hash_rules(h, "allow", p.allow);
    hash_rules(h, "deny", p.deny);
    for (const auto& r : p.redirects) {
      h.add("redirect");
      h.add(r.from);
      for (const auto& t : r.to) h.add(t);
    }
  }
  for (const auto& b : cfg.sessions) {
    s->bindings_.push_back({b.source, b.id, s->find_policy(b.policy)});
    h.add("session");
    h.add(b.id);
    h.add(b.source.to_string());
    h.add(b.policy);
  }
  std::stable_sort(s->bindings_.begin(), s->bindings_.end(),
                   [](const binding& a, const binding& b) { return a.source.prefix > b.source.prefix; });
  if (cfg.default_policy) {
    s->default_policy_ = s->find_policy(*cfg.default_policy);
    h.add("default");
    h.add(*cfg.default_policy);
  }
  s->version_ = h.hex();
  return std::shared_ptr<const snapshot>(std::move(s));
}

std::optional<snapshot::session> snapshot::session_for(const boost::asio::ip::address& source,
                                                       const session_table* registered) const noexcept {
  if (registered) {
    if (const auto* r = registered->find(source)) {
      const auto* p = find_policy(r->policy);
      if (!p) return std::nullopt;
      return session{r->id, p};
    }
  }
  for (const auto& b : bindings_)
    if (b.source.contains(source)) return session{b.id, b.policy};
  if (default_policy_) return session{"default", default_policy_};
  return std::nullopt;
}

const compiled_policy* snapshot::find_policy(std::string_view name) const noexcept {
  for (const auto& p : policies_)
    if (p->name() == name) return p.get();
  return nullptr;
}

}  // namespace airlock::policy
