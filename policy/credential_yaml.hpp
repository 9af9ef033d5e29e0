#pragma once
// `policies.NAME.credentials:` from YAML, with the secret files read and checked.
// Internal to policy/.
#include "base/result.hpp"
#include "policy/yaml_reader.hpp"

namespace airlock::policy::detail {

// Reads the entries of one policy; `p.allow` must be loaded already (each host must be
// covered by an allow rule with inspect: true). Errors never contain a secret.
std::vector<credential_config> parse_credentials(yaml_reader& r, const YAML::Node& n, const std::string& where,
                                                 const policy_config& p);

// A secret file's value: an absolute path to a non-empty regular file that neither group
// nor others may access, at most max_secret_bytes, one line (one trailing newline is
// dropped). The error says what is wrong and how to fix it, never what the file holds.
base::result<std::string> read_secret_file(const std::string& path);

inline constexpr std::size_t max_secret_bytes = 8192;

}  // namespace airlock::policy::detail
