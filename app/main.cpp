// The `airlock` binary: subcommand dispatch only; each command lives in its own cmd_*.cpp.
#include "app/cli.hpp"

#include <cstdio>
#include <string_view>
#include <vector>

namespace {

using airlock::app::commands;

void print_overview() {
  std::printf("airlock - egress policy for sandboxes: a transparent proxy and filtering DNS server\n"
              "that let code reach only the names its policy allows, and log every decision.\n\n"
              "Usage: airlock COMMAND [OPTIONS]\n\nCommands:\n");
  for (const auto& c : commands())
    std::printf("  %-10.*s %.*s\n", static_cast<int>(c.name.size()), c.name.data(), static_cast<int>(c.summary.size()),
                c.summary.data());
  std::printf("\nRun 'airlock COMMAND --help' for a command's options.\n");
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string_view> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    if (args.size() >= 2 && args[0] == "help") {
      for (const auto& c : commands())
        if (c.name == args[1]) return std::printf("%.*s", static_cast<int>(c.help.size()), c.help.data()), 0;
    }
    print_overview();
    return args.empty() ? airlock::app::exit_usage : 0;
  }
  if (args[0] == "--version") {
    std::printf("airlock %s\n", AIRLOCK_VERSION);
    return 0;
  }
  for (const auto& c : commands()) {
    if (c.name != args[0]) continue;
    const auto rest = std::span<const std::string_view>(args).subspan(1);
    for (auto a : rest) {
      if (a == "--") break;
      if (a == "--help" || a == "-h") return std::printf("%.*s", static_cast<int>(c.help.size()), c.help.data()), 0;
    }
    return c.run(rest);
  }
  std::fprintf(stderr, "airlock: unknown command '%.*s'. Run 'airlock --help' for the list.\n",
               static_cast<int>(args[0].size()), args[0].data());
  return airlock::app::exit_usage;
}
