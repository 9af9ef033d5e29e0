#pragma once
// One rule list entry ({host|regex|cidr, ports, inspect}) from YAML; shared by policies,
// the operator floors and the service families. Internal to policy/.
#include "policy/yaml_reader.hpp"

namespace airlock::policy::detail {

struct rule_context {
  bool is_deny = false;       // deny rules cover every port unless they list some
  bool family_entry = false;  // family files carry a `why:` per rule and no `inspect`
};

std::optional<rule_config> parse_rule(yaml_reader& r, const YAML::Node& n, const std::string& where, rule_context ctx);
std::vector<rule_config> parse_rules(yaml_reader& r, const YAML::Node& n, const std::string& where, rule_context ctx);
// An exact name or "*.suffix" (redirect targets use the same grammar as host rules).
std::optional<rule_config> parse_host_pattern(yaml_reader& r, const YAML::Node& n, const std::string& where);

// RE2 settings shared by validation and compilation, so what loads also compiles.
inline constexpr int max_regex_program_size = 2000;

}  // namespace airlock::policy::detail
