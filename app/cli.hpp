#pragma once
// Subcommand table and a small argument reader: flags with values (`-c FILE`,
// `--config FILE`, `--config=FILE`), switches, positionals, and an error that names
// the flag and the command's --help.
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace airlock::app {

using args = std::span<const std::string_view>;

struct command {
  std::string_view name;
  std::string_view summary;  // one line for `airlock --help`
  std::string_view help;     // the whole `airlock NAME --help`
  int (*run)(args);
};

std::span<const command> commands();

// Exit codes shared by every subcommand.
inline constexpr int exit_ok = 0;
inline constexpr int exit_error = 1;  // a runtime failure
inline constexpr int exit_usage = 2;  // bad arguments or a bad configuration

class arg_reader {
 public:
  arg_reader(std::string_view command, args a) : command_(command), args_(a) {}

  // Declares a flag that takes a value; returns it if given (last one wins).
  std::optional<std::string> value(std::string_view short_name, std::string_view long_name);
  // Declares a flag that may repeat.
  std::vector<std::string> values(std::string_view long_name);
  // Declares a flag that may repeat, each value KEY=VALUE with a non-empty KEY.
  std::vector<std::pair<std::string, std::string>> key_values(std::string_view long_name);
  // Declares a switch.
  bool flag(std::string_view long_name);
  // What is left after every declared flag was taken; unknown flags are errors.
  std::vector<std::string> positionals();

  bool help_requested() const;
  bool failed() const { return !error_.empty(); }
  // Prints the first error and the hint to run --help; returns exit_usage.
  int usage_error() const;
  void fail(std::string message) {
    if (error_.empty()) error_ = std::move(message);
  }

 private:
  std::string_view command_;
  args args_;
  std::vector<bool> used_ = std::vector<bool>(args_.size(), false);
  std::string error_;
};

}  // namespace airlock::app
