#include "app/cli.hpp"
#include "daemon/daemon.hpp"

namespace airlock::app {

int run_daemon_command(args a) {
  arg_reader r("daemon", a);
  daemon::daemon_options o;
  if (auto c = r.value("-c", "--config")) o.config_path = *c;
  o.decisions_log = r.value("", "--log");
  if (auto rest = r.positionals(); !rest.empty()) r.fail("unexpected argument '" + rest.front() + "'");
  if (r.failed()) return r.usage_error();
  return daemon::run_daemon(o);
}

}  // namespace airlock::app
