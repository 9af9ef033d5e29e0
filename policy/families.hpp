#pragma once
// Service families: versioned host lists shipped with airlock (policy/families/*.yaml,
// documented in docs/families.md) that a policy includes by name, so nobody has to chase
// a registry's CDN and redirect hosts by hand.
#include "policy/config.hpp"

#include <boost/system/result.hpp>

#include <string_view>
#include <vector>

namespace airlock::policy {

struct family {
  std::string name;
  int version = 0;
  std::string description;
  std::vector<rule_config> allow;  // what an including policy may reach
  std::vector<rule_config> deny;   // what it may never reach (e.g. public DoH resolvers)
};

std::vector<std::string_view> family_names();
// Loads a family by name; an unknown name is an error with a suggestion.
boost::system::result<family, std::vector<config_error>> load_family(std::string_view name);

}  // namespace airlock::policy
