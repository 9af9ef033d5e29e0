#pragma once
// `airlock daemon`: loads the policy, opens the decision log, binds the proxy and DNS
// listeners, and runs them (daemon/instance.hpp: the main loop and one proxy loop per
// further thread) until SIGINT/SIGTERM. SIGHUP reloads the
// policy (a bad file keeps the old one) and reopens the log.
#include <filesystem>
#include <optional>
#include <string>

namespace airlock::daemon {

struct daemon_options {
  std::optional<std::filesystem::path> config_path;  // none: the embedded default policy
  std::optional<std::string> decisions_log;          // overrides log.decisions
};

// Returns the process exit status: 0 after a clean shutdown, 2 for a bad configuration,
// 1 when a listener or the log cannot be opened.
int run_daemon(const daemon_options& options);

}  // namespace airlock::daemon
