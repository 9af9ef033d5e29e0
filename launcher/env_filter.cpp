#include "launcher/env_filter.hpp"

#include <algorithm>
#include <map>
#include <optional>

extern char** environ;

namespace airlock::launcher {
namespace {

bool valid_name(std::string_view n) {
  if (n.empty() || (n.front() >= '0' && n.front() <= '9')) return false;
  return std::all_of(n.begin(), n.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  });
}

bool allowed_by_default(std::string_view name) {
  if (name.starts_with("LC_")) return true;
  return std::find(std::begin(default_env_allowlist), std::end(default_env_allowlist), name) !=
         std::end(default_env_allowlist);
}

}  // namespace

base::result<std::vector<std::string>> filter_environment(std::span<const std::string> parent,
                                                          const env_request& request) {
  // name -> explicit value (--env VAR=VALUE) or nothing (take the parent's).
  std::map<std::string, std::optional<std::string>, std::less<>> named;
  for (const auto& arg : request.named) {
    const auto eq = arg.find('=');
    const std::string name = arg.substr(0, eq);
    if (!valid_name(name))
      return base::result<std::vector<std::string>>(
          boost::system::in_place_error,
          "--env '" + arg + "': expected VAR or VAR=VALUE, VAR made of letters, digits and _");
    if (eq == std::string::npos) named[name];  // keeps an earlier VAR=VALUE for the same name
    else named[name] = arg.substr(eq + 1);
  }
  std::map<std::string, std::string, std::less<>> forced(request.forced.begin(), request.forced.end());

  std::vector<std::string> out;
  std::map<std::string, bool, std::less<>> emitted;
  for (const auto& entry : parent) {
    const auto eq = entry.find('=');
    if (eq == std::string::npos || eq == 0) continue;
    const std::string_view name(entry.data(), eq);
    if (emitted.contains(name) || forced.contains(name)) continue;
    auto n = named.find(name);
    if (n != named.end()) {
      out.push_back(n->second ? std::string(name) + "=" + *n->second : entry);
    } else if (allowed_by_default(name)) {
      out.push_back(entry);
    } else {
      continue;
    }
    emitted.emplace(name, true);
  }
  for (const auto& [name, value] : named)
    if (value && !emitted.contains(name) && !forced.contains(name)) {
      out.push_back(name + "=" + *value);
      emitted.emplace(name, true);
    }
  if (!emitted.contains("PATH") && !forced.contains("PATH")) out.push_back("PATH=" + std::string(default_path));
  for (const auto& [name, value] : request.forced) out.push_back(name + "=" + value);
  return out;
}

std::vector<std::string> current_environment() {
  std::vector<std::string> out;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) out.emplace_back(*e);
  return out;
}

}  // namespace airlock::launcher
