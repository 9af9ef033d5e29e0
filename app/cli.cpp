#include "app/cli.hpp"

#include <cstdio>

namespace airlock::app {

std::optional<std::string> arg_reader::value(std::string_view short_name, std::string_view long_name) {
  std::optional<std::string> out;
  for (std::size_t i = 0; i < args_.size(); ++i) {
    const auto a = args_[i];
    if (a == "--") break;
    if ((!short_name.empty() && a == short_name) || a == long_name) {
      used_[i] = true;
      if (i + 1 >= args_.size()) {
        fail(std::string(a) + " needs a value");
        return std::nullopt;
      }
      used_[++i] = true;
      out = std::string(args_[i]);
    } else if (a.size() > long_name.size() && a.starts_with(long_name) && a[long_name.size()] == '=') {
      used_[i] = true;
      out = std::string(a.substr(long_name.size() + 1));
    }
  }
  return out;
}

std::vector<std::string> arg_reader::values(std::string_view long_name) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < args_.size(); ++i) {
    const auto a = args_[i];
    if (a == "--") break;
    if (a == long_name) {
      used_[i] = true;
      if (i + 1 >= args_.size()) {
        fail(std::string(a) + " needs a value");
        return out;
      }
      used_[++i] = true;
      out.emplace_back(args_[i]);
    } else if (a.size() > long_name.size() && a.starts_with(long_name) && a[long_name.size()] == '=') {
      used_[i] = true;
      out.emplace_back(a.substr(long_name.size() + 1));
    }
  }
  return out;
}

std::vector<std::pair<std::string, std::string>> arg_reader::key_values(std::string_view long_name) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& v : values(long_name)) {
    const auto eq = v.find('=');
    if (eq == std::string::npos || eq == 0) fail(std::string(long_name) + " '" + v + "': expected KEY=VALUE");
    else out.emplace_back(v.substr(0, eq), v.substr(eq + 1));
  }
  return out;
}

bool arg_reader::flag(std::string_view long_name) {
  bool found = false;
  for (std::size_t i = 0; i < args_.size(); ++i) {
    if (args_[i] == "--") break;
    if (args_[i] == long_name) used_[i] = true, found = true;
  }
  return found;
}

bool arg_reader::help_requested() const {
  for (auto a : args_) {
    if (a == "--") break;
    if (a == "--help" || a == "-h") return true;
  }
  return false;
}

std::vector<std::string> arg_reader::positionals() {
  std::vector<std::string> out;
  bool rest = false;
  for (std::size_t i = 0; i < args_.size(); ++i) {
    if (used_[i]) continue;
    const auto a = args_[i];
    if (!rest && a == "--") {
      rest = true;
      continue;
    }
    if (!rest && a.size() > 1 && a.front() == '-') {
      fail("unknown option '" + std::string(a) + "'");
      continue;
    }
    out.emplace_back(a);
  }
  return out;
}

int arg_reader::usage_error() const {
  std::fprintf(stderr, "airlock %.*s: %s\nRun 'airlock %.*s --help' for usage.\n", static_cast<int>(command_.size()),
               command_.data(), error_.c_str(), static_cast<int>(command_.size()), command_.data());
  return exit_usage;
}

}  // namespace airlock::app
