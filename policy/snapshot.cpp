#include "policy/snapshot.hpp"

#include "policy/special_addresses.hpp"

#include <algorithm>
#include <cstdio>

namespace airlock::policy {

bool compiled_policy::rule::covers(std::uint16_t port) const noexcept {
  return port == any_port || ports.empty() || std::binary_search(ports.begin(), ports.end(), port);
}

void compiled_policy::rule_set::add(const rule_config& r) {
  const auto index = static_cast<std::uint32_t>(rules.size());
  rules.push_back({r.ports, r.mark.to_string(), r.network});
  switch (r.type) {
    case rule_config::kind::host: exact[r.pattern].push_back(index); break;
    case rule_config::kind::wildcard: wildcard[r.pattern].push_back(index); break;
    case rule_config::kind::cidr: cidrs.push_back(index); break;
  }
}

// Cost grows with the labels of `name`, not with the number of rules: one exact lookup,
// then one wildcard lookup per proper suffix ("a.b.c" tries "b.c" and "c").
template <typename Fn>
void compiled_policy::rule_set::for_each_match(std::string_view name, Fn&& fn) const {
  if (auto it = exact.find(name); it != exact.end())
    for (auto i : it->second) fn(rules[i]);
  if (wildcard.empty()) return;
  for (auto dot = name.find('.'); dot != std::string_view::npos; dot = name.find('.', dot + 1))
    if (auto it = wildcard.find(name.substr(dot + 1)); it != wildcard.end())
      for (auto i : it->second) fn(rules[i]);
}

compiled_policy::compiled_policy(const policy_config& cfg) : name_(cfg.name), mode_(cfg.mode) {
  for (const auto& r : cfg.allow) allow_.add(r);
  for (const auto& r : cfg.deny) deny_.add(r);
}

decision compiled_policy::finish(decision d) const noexcept {
  if (d.verdict == verdict::deny && mode_ == policy_mode::audit) d.verdict = verdict::audit_deny;
  return d;
}

decision compiled_policy::decide(const domain_name& name, std::uint16_t port) const noexcept {
  const rule* denied = nullptr;
  deny_.for_each_match(name.str(), [&](const rule& r) {
    // A DNS query (any_port) is refused only by a deny rule that covers every port:
    // a name denied on port 22 alone must still resolve for 443.
    bool applies = port == any_port ? r.ports.empty() : r.covers(port);
    if (!denied && applies) denied = &r;
  });
  if (denied) return finish({verdict::deny, reason::host_denied, denied->origin});

  const rule* allowed = nullptr;
  const rule* other_port = nullptr;
  allow_.for_each_match(name.str(), [&](const rule& r) {
    if (r.covers(port)) {
      if (!allowed) allowed = &r;
    } else if (!other_port) {
      other_port = &r;
    }
  });
  if (allowed) return {verdict::allow, reason::host_allowed, allowed->origin};
  if (other_port) return finish({verdict::deny, reason::port_not_allowed, other_port->origin});
  return finish({verdict::deny, reason::host_not_allowed, "default"});
}

const std::string* compiled_policy::cidr_allowance(const boost::asio::ip::address& address,
                                                   std::uint16_t port) const noexcept {
  for (auto i : allow_.cidrs) {
    const auto& r = allow_.rules[i];
    if (r.network->contains(address) && r.covers(port)) return &r.origin;
  }
  return nullptr;
}

decision compiled_policy::decide(const boost::asio::ip::address& address, std::uint16_t port) const noexcept {
  for (auto i : deny_.cidrs) {
    const auto& r = deny_.rules[i];
    if (r.network->contains(address) && r.covers(port)) return finish({verdict::deny, reason::host_denied, r.origin});
  }
  if (const auto* origin = cidr_allowance(address, port)) return {verdict::allow, reason::cidr_allowed, *origin};
  if (is_special(classify(address))) return finish({verdict::deny, reason::private_address, "default"});
  return finish({verdict::deny, reason::no_name, "default"});
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
    h.add(r.mark.to_string());  // the rule a decision names is part of what it says
  }
}

}  // namespace

std::shared_ptr<const snapshot> snapshot::compile(const config& cfg) {
  auto s = std::shared_ptr<snapshot>(new snapshot());
  fnv1a h;
  for (const auto& p : cfg.policies) {
    s->policies_.push_back(std::make_unique<compiled_policy>(p));
    s->rule_count_ += p.allow.size() + p.deny.size();
    h.add("policy");
    h.add(p.name);
    h.add(p.mode == policy_mode::audit ? "audit" : "enforce");
    hash_rules(h, "allow", p.allow);
    hash_rules(h, "deny", p.deny);
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
  return s;
}

std::optional<snapshot::session> snapshot::session_for(const boost::asio::ip::address& source) const noexcept {
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
