#pragma once
// `airlock daemon`: loads the policy, opens the decision log, binds the proxy and DNS
// listeners, and runs them on one event loop until SIGINT/SIGTERM. SIGHUP reloads the
// policy (a bad file keeps the old one) and reopens the log.
#include <filesystem>
#include <optional>
#include <string>

namespace airlock::core {

struct daemon_options {
  std::optional<std::filesystem::path> config_path;  // none: the embedded default policy
  std::optional<std::string> decisions_log;          // overrides log.decisions
};

// Returns the process exit status: 0 after a clean shutdown, 2 for a bad configuration,
// 1 when a listener or the log cannot be opened.
int run_daemon(const daemon_options& options);

}  // namespace airlock::core
