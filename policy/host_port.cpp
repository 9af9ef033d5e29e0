#include "policy/host_port.hpp"

#include "policy/domain_name.hpp"

#include <charconv>

namespace airlock::policy {

std::optional<host_port> parse_host_port(std::string_view text) {
  host_port out;
  std::string_view port;
  bool has_port = false;
  if (text.starts_with('[')) {
    auto close = text.find(']');
    if (close == std::string_view::npos) return std::nullopt;
    out.host = std::string(text.substr(1, close - 1));
    if (close + 1 < text.size()) {
      if (text[close + 1] != ':') return std::nullopt;
      port = text.substr(close + 2);
      has_port = true;
    }
  } else if (auto colon = text.rfind(':'); colon != std::string_view::npos && text.find(':') == colon) {
    out.host = std::string(text.substr(0, colon));
    port = text.substr(colon + 1);
    has_port = true;
  } else {
    out.host = std::string(text);  // a name, or a bare IPv6 address without a port
  }
  if (has_port) {
    unsigned value = 0;
    auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
    if (port.empty() || ec != std::errc{} || end != port.data() + port.size() || value < 1 || value > 65535)
      return std::nullopt;
    out.port = static_cast<std::uint16_t>(value);
  }
  if (out.host.empty()) return std::nullopt;
  return out;
}

base::result<rule_config> parse_host_pattern(std::string_view text) {
  if (text.empty())
    return base::result<rule_config>(boost::system::in_place_error,
                                     "empty host; write a name such as 'example.com' or '*.example.com'");
  rule_config out;
  std::string_view name = text;
  out.type = rule_config::kind::host;
  if (name.starts_with("*.")) {
    out.type = rule_config::kind::wildcard;
    name.remove_prefix(2);
  }
  const std::string quoted = "'" + std::string(text) + "'";
  if (name.find('*') != std::string_view::npos)
    return base::result<rule_config>(
        boost::system::in_place_error,
        "wildcard in the wrong place in " + quoted +
            "; only a leading '*.' is allowed (it matches subdomains at any depth), e.g. '*.example.com'");
  if (is_ip_literal(name))
    return base::result<rule_config>(boost::system::in_place_error,
                                     quoted + " is an address; write 'cidr: " + std::string(text) + "' instead");
  auto canonical = domain_name::parse(name);
  if (!canonical.has_value())
    return base::result<rule_config>(boost::system::in_place_error,
                                     quoted + ": " + std::string(to_string(canonical.error())));
  out.pattern = canonical->str();
  return out;
}

}  // namespace airlock::policy
