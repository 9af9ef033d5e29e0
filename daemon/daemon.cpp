#include "daemon/daemon.hpp"

#include "daemon/instance.hpp"

#include <cstdio>

namespace airlock::daemon {

int run_daemon(const daemon_options& options) {
  auto made = instance::create(instance_options{options.config_path, options.decisions_log, std::nullopt});
  if (!made.has_value()) {
    std::fprintf(stderr, "%s%s\n", made.error().exit_code == 2 ? "" : "airlock: ", made.error().message.c_str());
    return made.error().exit_code;
  }
  auto& daemon = **made;
  daemon.handle_signals();
  std::fprintf(stderr, "%s\n", daemon.ready_line().c_str());
  daemon.run();
  return 0;
}

}  // namespace airlock::daemon
