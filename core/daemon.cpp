#include "core/daemon.hpp"

#include "core/instance.hpp"
#include "policy/config.hpp"

#include <cstdio>

namespace airlock::core {
namespace {

// Parts of the v1 schema that load but are not served by this version yet: said once at
// start, so nobody believes a listener or an inspection is there when it is not.
void warn_unserved(const std::optional<std::filesystem::path>& path) {
  auto cfg = path ? policy::load_config_file(*path) : policy::load_default_config();
  if (!cfg.has_value()) return;
  auto warn = [](const char* what) { std::fprintf(stderr, "airlock: warning: %s\n", what); };
  bool inspect = false, redirects = false;
  for (const auto& p : cfg->policies) {
    redirects = redirects || !p.redirects.empty();
    for (const auto& r : p.allow) inspect = inspect || r.inspect;
  }
  if (inspect) warn("'inspect: true' rules are decided on SNI alone: TLS inspection is not in this version");
  if (redirects) warn("redirects: are not followed yet; a redirect target needs its own allow rule");
}

}  // namespace

int run_daemon(const daemon_options& options) {
  auto made = instance::create(instance_options{options.config_path, options.decisions_log, std::nullopt});
  if (!made.has_value()) {
    std::fprintf(stderr, "%s%s\n", made.error().exit_code == 2 ? "" : "airlock: ", made.error().message.c_str());
    return made.error().exit_code;
  }
  warn_unserved(options.config_path);
  auto& daemon = **made;
  daemon.handle_signals();
  std::fprintf(stderr, "%s\n", daemon.ready_line().c_str());
  daemon.run();
  return 0;
}

}  // namespace airlock::core
