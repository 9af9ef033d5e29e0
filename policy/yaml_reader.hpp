#pragma once
// The pieces every YAML walker in policy/ shares: marks (1-based FILE:LINE:COL), error
// collection, strict keys with "did you mean", and typed scalars. Internal to policy/.
#include "policy/config.hpp"

#include <yaml-cpp/yaml.h>

#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace airlock::policy::detail {

// The closest candidate within a third of the key's length, or empty.
std::string_view did_you_mean(std::string_view key, std::span<const std::string_view> candidates);

class yaml_reader {
 public:
  explicit yaml_reader(std::string file) : file_(std::move(file)) {}

  const std::string& file() const noexcept { return file_; }
  std::vector<config_error>& errors() noexcept { return errors_; }

  source_mark mark(const YAML::Node& n) const;
  void error(const YAML::Node& n, std::string message);
  void error_at(source_mark m, std::string message) { errors_.push_back({std::move(m), std::move(message)}); }

  // Reports keys outside `allowed` (with a suggestion) and duplicate keys.
  void check_keys(const YAML::Node& map, std::initializer_list<std::string_view> allowed, std::string_view where);
  std::optional<std::string> string_of(const YAML::Node& n, std::string_view what);
  // A non-empty list of ports 1..65535 (or one port), sorted and without duplicates. With
  // `protocols`, an entry may also be a map `{port: N, protocol: tls|http|any}`, collected
  // there sorted by port; without it such a map is an error.
  std::vector<std::uint16_t> ports(const YAML::Node& n, std::string_view where,
                                   std::vector<port_protocol_entry>* protocols = nullptr);
  // A scalar or a list of ADDRESS:PORT; a bare address takes default_port when given.
  std::vector<endpoint_config> endpoints(const YAML::Node& n, std::string_view what, int default_port = -1);
  // A list of strings (or one string).
  std::vector<std::string> strings(const YAML::Node& n, std::string_view what);

  static std::string scalar_text(const YAML::Node& n) {
    return n.IsScalar() ? n.Scalar() : std::string("<not a scalar>");
  }

 private:
  std::string file_;
  std::vector<config_error> errors_;
};

}  // namespace airlock::policy::detail
