#pragma once
// "HOST[:PORT]" as people type it on command lines and in control API requests:
// a name, an IPv4 address, or an IPv6 address (in brackets when a port follows).
#include "base/result.hpp"
#include "policy/config.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace airlock::policy {

struct host_port {
  std::string host;
  std::optional<std::uint16_t> port;
};

// nullopt for an empty host, a bad port (1..65535) or unbalanced brackets.
std::optional<host_port> parse_host_port(std::string_view text);

// A `host:` pattern ("example.com" or "*.example.com") as a host or wildcard rule with
// its canonical name, or a message saying what is wrong and what to write instead. The
// one place that knows the pattern rules: YAML rules and run-time allowances use it.
base::result<rule_config> parse_host_pattern(std::string_view text);

}  // namespace airlock::policy
