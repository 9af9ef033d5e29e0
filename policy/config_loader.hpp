#pragma once
// The loader behind load_config_text: one YAML file -> `config`, each section read by its
// own member (config_yaml.cpp: the top level; config_settings_yaml.cpp: the daemon's
// settings; config_policies_yaml.cpp: policies and sessions). Internal to policy/.
#include "policy/yaml_reader.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace airlock::policy {

class config_loader {
 public:
  explicit config_loader(std::string file) : r_(std::move(file)) {}

  config_result load(std::string_view text);

 private:
  using yaml_reader = detail::yaml_reader;

  // config_settings_yaml.cpp
  void load_listen(const YAML::Node& n, listen_config& listen);
  void load_log(const YAML::Node& n, config& cfg);
  void load_dns(const YAML::Node& n, dns_config& out);
  void load_threads(const YAML::Node& n, unsigned& out);
  void load_limits(const YAML::Node& n, limits_config& out);
  void load_timeouts(const YAML::Node& n, timeouts_config& out);
  void load_overload(const YAML::Node& n, overload_config& out);
  static std::optional<std::uint16_t> rr_type_number(const std::string& name);
  void load_inspection(const YAML::Node& n, inspection_config& out);
  void load_sandboxes(const YAML::Node& n, sandboxes_config& out);

  // config_policies_yaml.cpp
  void load_redirects(const YAML::Node& n, const std::string& where, std::vector<redirect_config>& out);
  void include_family(const YAML::Node& n, policy_config& p);
  void load_policies(const YAML::Node& n, std::vector<policy_config>& out);
  void load_approval(const YAML::Node& n, const std::string& where, policy_config& p);
  void deny_public_resolvers(std::vector<policy_config>& policies);
  void load_sessions(const YAML::Node& n, config& cfg);

  // config_yaml.cpp
  static const policy_config* find(const config& cfg, const std::string& name);
  static std::string known(const config& cfg);

  yaml_reader r_;
};

}  // namespace airlock::policy
