#pragma once
// The sandbox's environment: an allowlist of harmless variables from the parent, plus
// what the user names with --env. Everything else stays outside, so SSH_AUTH_SOCK,
// AWS_*, GOOGLE_*, AZURE_*, GITHUB_TOKEN, NPM_TOKEN and their kind never pass unless
// named. Pure: the caller passes `environ` and gets the child's `envp`.
#include "base/result.hpp"

#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace airlock::launcher {

// Variables that pass by default: the shell's basics, locale and terminal.
// (LC_* passes as a family.)
inline constexpr std::string_view default_env_allowlist[] = {
    "PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "TERM", "COLORTERM", "TZ", "NO_COLOR"};

inline constexpr std::string_view default_path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

struct env_request {
  // --env VAR (the parent's value, if it has one) or --env VAR=VALUE (this value).
  std::vector<std::string> named;
  // Set by airlock itself (the CA variables, AIRLOCK_SESSION); win over everything.
  std::vector<std::pair<std::string, std::string>> forced;
};

// The child's environment as "NAME=VALUE" strings, in a stable order (parent's order,
// then named-only values, then forced ones). PATH is set to `default_path` when the
// parent has none. Errors name the bad --env argument.
base::result<std::vector<std::string>> filter_environment(std::span<const std::string> parent,
                                                          const env_request& request);

// Reads `environ` into strings (the one impure helper, for the caller).
std::vector<std::string> current_environment();

}  // namespace airlock::launcher
