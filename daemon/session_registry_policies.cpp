#include "daemon/metrics.hpp"
#include "daemon/session_registry.hpp"
#include "daemon/session_registry_parts.hpp"
#include "policy/host_port.hpp"
#include "policy/snapshot.hpp"

#include <algorithm>

namespace airlock::daemon {

std::string derived_policy_name(const std::string& id) { return std::string(metrics::runtime_policy_prefix) + id; }

// "HOST[:PORT]" allowances as rules: a name or "*.suffix" on the given port (or the
// default 80 and 443), an address as a /32 or /128 cidr rule.
registry_result<std::vector<policy::rule_config>> allowances(const std::vector<std::string>& texts,
                                                             const std::string& id) {
  std::vector<policy::rule_config> rules;
  registry_error errors{400, {}};
  for (std::size_t i = 0; i < texts.size(); ++i) {
    const auto hp = policy::parse_host_port(texts[i]);
    if (!hp) {
      errors.messages.push_back("allow[" + std::to_string(i) + "]: '" + texts[i] +
                                "' is not HOST[:PORT] (port 1..65535; IPv6 as [ADDR]:PORT)");
      continue;
    }
    policy::rule_config rule;
    boost::system::error_code ec;
    const auto address = boost::asio::ip::make_address(hp->host, ec);
    if (!ec) {
      rule.type = policy::rule_config::kind::cidr;
      rule.network = policy::cidr{address, static_cast<std::uint8_t>(address.is_v4() ? 32 : 128)};
      rule.pattern = hp->host;
    } else if (auto pattern = policy::parse_host_pattern(hp->host); pattern.has_value()) {
      rule = std::move(*pattern);
    } else {
      errors.messages.push_back("allow[" + std::to_string(i) + "]: " + pattern.error());
      continue;
    }
    rule.ports = hp->port ? std::vector<std::uint16_t>{*hp->port} : std::vector<std::uint16_t>{80, 443};
    // What decisions name as their rule: where the allowance came from.
    rule.mark = policy::source_mark{"session " + id + " allow", static_cast<int>(i + 1), 1};
    rules.push_back(std::move(rule));
  }
  if (!errors.messages.empty()) return errors;
  return rules;
}

namespace {

std::vector<std::string> error_texts(const std::vector<policy::config_error>& errors) {
  std::vector<std::string> out;
  for (const auto& e : errors) out.push_back(e.to_string());
  return out;
}

}  // namespace

registry_result<std::shared_ptr<const policy::snapshot>> session_registry::compile_and_publish(
    const policy::config& base) {
  policy::config composed = base;
  for (const auto& [id, e] : sessions_) {
    if (e.extra_allow.empty()) continue;
    auto it = std::find_if(base.policies.begin(), base.policies.end(),
                           [&](const auto& p) { return p.name == e.base_policy; });
    // A session whose policy is gone keeps a name the snapshot lacks: it fails closed.
    if (it == base.policies.end()) continue;
    policy::policy_config derived = *it;
    derived.name = derived_policy_name(id);
    derived.allow.insert(derived.allow.end(), e.extra_allow.begin(), e.extra_allow.end());
    composed.policies.push_back(std::move(derived));
  }
  auto next = policy::snapshot::compile(composed);
  if (!next.has_value()) return registry_error{422, error_texts(next.error())};
  policies_.publish(*next);
  return *next;
}

void session_registry::publish_runtime_table() {
  std::vector<policy::runtime_session> table;
  for (const auto& [id, e] : sessions_) {
    if (!e.view.runtime) continue;
    policy::runtime_session s;
    s.id = id;
    s.policy = e.view.policy;
    s.labels = e.view.labels;
    for (const auto& text : e.view.sources)
      if (auto c = policy::cidr::parse(text); c.has_value()) s.sources.push_back(*c);
    table.push_back(std::move(s));
  }
  policies_.publish(std::make_shared<const policy::session_table>(std::move(table)));
}

}  // namespace airlock::daemon
