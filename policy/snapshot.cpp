#include "policy/snapshot.hpp"

#include "policy/request_target.hpp"
#include "policy/special_addresses.hpp"

#include <algorithm>
#include <cstdio>

namespace airlock::policy {

compiled_policy::compiled_policy(std::string name, policy_mode mode, std::shared_ptr<const floors> floor)
    : name_(std::move(name)), mode_(mode), floor_(std::move(floor)) {}

std::optional<std::string> compiled_policy::build(const policy_config& cfg) {
  if (auto e = allow_.build(cfg.allow)) return "policies." + name_ + ".allow: " + *e;
  if (auto e = deny_.build(cfg.deny)) return "policies." + name_ + ".deny: " + *e;
  for (const auto& c : cfg.credentials)
    credentials_[c.host].push_back({c.path, {c.header, c.value, c.mark.to_string()}});
  for (auto& [host, entries] : credentials_)
    std::stable_sort(entries.begin(), entries.end(), [](const credential_entry& a, const credential_entry& b) {
      return a.path.size() > b.path.size();
    });
  redirects_ = cfg.redirects;
  approval_wait_ = cfg.approval_wait;
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

// Over the allow rules matching a name (or an address): the first that covers the port
// and lets `spoken` be spoken there, else the closest refusal, so a denial names the most
// specific reason and its rule.
struct allow_match {
  std::uint16_t port;
  wire spoken;
  const compiled_rule* allowed = nullptr;
  const compiled_rule* other_protocol = nullptr;  // covers the port, not what was spoken
  const compiled_rule* other_port = nullptr;

  void operator()(const compiled_rule& r) noexcept {
    const compiled_rule*& slot = !r.covers(port) ? other_port : r.speaks(port, spoken) ? allowed : other_protocol;
    if (!slot) slot = &r;
  }
  decision allow(reason why) const noexcept {
    return {verdict::allow, why, allowed->origin, allowed->inspect,
            port == any_port ? port_protocol::any : allowed->protocol_on(port)};
  }
  // The policy's refusal (not yet softened): a rule that would have allowed but for the
  // protocol (the floors' too), then, for names, one on another port, else `nothing`.
  decision refusal(const allow_match& floor, reason nothing) const noexcept {
    for (const auto* m : {this, &floor})
      if (m->other_protocol) return {verdict::deny, reason::protocol_not_allowed, m->other_protocol->origin};
    if (other_port && nothing == reason::host_not_allowed)
      return {verdict::deny, reason::port_not_allowed, other_port->origin};
    return {verdict::deny, nothing, "default"};
  }
};

}  // namespace

decision compiled_policy::decide(const domain_name& name, std::uint16_t port, wire spoken) const noexcept {
  // 1. Operator floors: always_deny is never softened by audit mode.
  if (const auto* r = first_deny(floor_->deny, name.str(), port))
    return {verdict::deny, reason::host_denied, r->origin};
  allow_match floor_match{port, spoken};
  floor_->allow.for_each_name_match(name.str(), floor_match);
  if (floor_match.allowed) return floor_match.allow(reason::host_allowed);

  // 2. The policy: deny beats allow.
  if (const auto* r = first_deny(deny_, name.str(), port))
    return soften({verdict::deny, reason::host_denied, r->origin});
  allow_match match{port, spoken};
  allow_.for_each_name_match(name.str(), match);
  if (match.allowed) return match.allow(reason::host_allowed);
  return soften(match.refusal(floor_match, reason::host_not_allowed));
}

namespace {

// Collects, over the allow rules matching a name, the first that admits one request and
// the closest refusals, so a denial names the most specific reason and its rule.
struct request_judge {
  std::uint16_t port;
  std::string_view method;
  request_target target;
  const compiled_rule* admitted = nullptr;
  const compiled_rule* wrong_method = nullptr;  // its paths admit the path, its methods not the method
  const compiled_rule* unjudged = nullptr;      // has paths, and the path is ambiguous
  const compiled_rule* wrong_path = nullptr;
  const compiled_rule* other_port = nullptr;

  void operator()(const compiled_rule& r) noexcept {
    auto first = [&r](const compiled_rule*& slot) {
      if (!slot) slot = &r;
    };
    if (!r.covers(port)) return first(other_port);
    if (!r.paths.empty()) {
      if (target.shape != target_shape::plain) return first(unjudged);
      if (std::none_of(r.paths.begin(), r.paths.end(),
                       [&](const std::string& p) { return path_under(target.path, p); }))
        return first(wrong_path);
    }
    if (!r.admits_method(method)) return first(wrong_method);
    first(admitted);
  }
};

}  // namespace

decision compiled_policy::decide_request(const domain_name& name, std::uint16_t port, std::string_view method,
                                         std::string_view target) const noexcept {
  request_judge judge{port, method, classify_target(target)};
  // A target that does not parse is not judged at all, in any mode: airlock never fails open.
  if (judge.target.shape == target_shape::malformed) return {verdict::deny, reason::parse_error, "default"};
  if (const auto* r = first_deny(floor_->deny, name.str(), port))
    return {verdict::deny, reason::host_denied, r->origin};
  floor_->allow.for_each_name_match(name.str(), judge);
  if (judge.admitted) return {verdict::allow, reason::host_allowed, judge.admitted->origin, judge.admitted->inspect};
  if (const auto* r = first_deny(deny_, name.str(), port))
    return soften({verdict::deny, reason::host_denied, r->origin});
  allow_.for_each_name_match(name.str(), judge);
  if (judge.admitted) return {verdict::allow, reason::host_allowed, judge.admitted->origin, judge.admitted->inspect};
  if (judge.wrong_method) return soften({verdict::deny, reason::method_not_allowed, judge.wrong_method->origin});
  if (judge.unjudged) return {verdict::deny, reason::parse_error, judge.unjudged->origin};
  if (judge.wrong_path) return soften({verdict::deny, reason::path_not_allowed, judge.wrong_path->origin});
  if (judge.other_port) return soften({verdict::deny, reason::port_not_allowed, judge.other_port->origin});
  return soften({verdict::deny, reason::host_not_allowed, "default"});
}

const credential* compiled_policy::credential_for(const domain_name& name, std::string_view target) const noexcept {
  if (credentials_.empty()) return nullptr;
  const auto it = credentials_.find(name.str());
  if (it == credentials_.end()) return nullptr;
  const auto t = classify_target(target);
  if (t.shape == target_shape::malformed) return nullptr;
  for (const auto& e : it->second)
    if (e.path == "/" || (t.shape == target_shape::plain && path_under(t.path, e.path))) return &e.cred;
  return nullptr;
}

const redirect_rule* compiled_policy::redirect_to(const domain_name& from, const domain_name& to) const noexcept {
  const std::string& target = to.str();
  auto matches = [&target](const std::string& pattern) {
    if (!pattern.starts_with("*.")) return pattern == target;
    const std::string_view suffix = std::string_view(pattern).substr(2);
    return target.size() > suffix.size() && target.ends_with(suffix) &&
           target[target.size() - suffix.size() - 1] == '.';
  };
  for (const auto& r : redirects_)
    if (r.from == from.str() && std::any_of(r.to.begin(), r.to.end(), matches)) return &r;
  return nullptr;
}

bool compiled_policy::redirects_from(const domain_name& from) const noexcept {
  return std::any_of(redirects_.begin(), redirects_.end(),
                     [&](const redirect_rule& r) { return r.from == from.str(); });
}

const std::string* compiled_policy::cidr_allowance(const boost::asio::ip::address& address, std::uint16_t port,
                                                   bool own_only) const noexcept {
  const std::string* denied = nullptr;
  auto deny = [&](const compiled_rule& r) {
    if (!denied && r.covers(port)) denied = &r.origin;
  };
  floor_->deny.for_each_address_match(address, deny);
  deny_.for_each_address_match(address, deny);
  if (denied) return nullptr;
  const std::string* allowed = nullptr;
  auto allow = [&](const compiled_rule& r) {
    if (!allowed && r.covers(port) && (r.own || !own_only)) allowed = &r.origin;
  };
  floor_->allow.for_each_address_match(address, allow);
  allow_.for_each_address_match(address, allow);
  return allowed;
}

decision compiled_policy::decide(const boost::asio::ip::address& address, std::uint16_t port,
                                 wire spoken) const noexcept {
  const compiled_rule* hit = nullptr;
  auto first = [&](const compiled_rule& r) {
    if (!hit && r.covers(port)) hit = &r;
  };
  floor_->deny.for_each_address_match(address, first);
  if (hit) return {verdict::deny, reason::host_denied, hit->origin};
  allow_match floor_match{port, spoken};
  floor_->allow.for_each_address_match(address, floor_match);
  if (floor_match.allowed) return floor_match.allow(reason::cidr_allowed);
  deny_.for_each_address_match(address, first);
  if (hit) return soften({verdict::deny, reason::host_denied, hit->origin});
  allow_match match{port, spoken};
  allow_.for_each_address_match(address, match);
  if (match.allowed) return match.allow(reason::cidr_allowed);
  // Special addresses are a floor too: audit mode never opens them.
  if (is_special(classify(address))) return {verdict::deny, reason::private_address, "default"};
  return soften(match.refusal(floor_match, reason::no_name));
}

reason snapshot::no_session_reason(const boost::asio::ip::address& source, const session_table* registered,
                                   std::string* held) {
  const auto* s = registered ? registered->find(source) : nullptr;
  if (s == nullptr) return reason::no_session;
  if (held) *held = s->id;
  return reason::session_unknown;
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
    for (const auto& p : r.protocols) h.add(std::to_string(p.port) + "/" + std::string(to_string(p.protocol)));
    h.add(r.inspect ? "inspect" : "");
    if (r.own) h.add("own");
    for (const auto& p : r.paths) h.add("path " + p);
    for (const auto& m : r.methods) h.add("method " + m);
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
    if (p.approval_wait) h.add("approval:" + std::to_string(p.approval_wait->count()));
    hash_rules(h, "allow", p.allow);
    hash_rules(h, "deny", p.deny);
    for (const auto& r : p.redirects) {
      h.add("redirect");
      h.add(r.from);
      for (const auto& t : r.to) h.add(t);
      h.add(r.mark.to_string());
    }
    // Where a credential comes from and where it goes; never the secret itself (the
    // version is logged, and a hash of a short secret could be searched).
    for (const auto& c : p.credentials) {
      h.add("credential");
      h.add(c.host);
      h.add(c.path);
      h.add(c.header);
      h.add(c.secret_file);
      h.add(c.mark.to_string());
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
