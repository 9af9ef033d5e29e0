// `airlock gc`: removes what dead `airlock run`s left behind.
#include "app/cli.hpp"
#include "app/launcher_flags.hpp"
#include "base/result.hpp"
#include "control/session_api.hpp"
#include "launcher/gc.hpp"

#include <cstdio>

namespace airlock::app {

int run_gc_command(args a) {
  arg_reader r("gc", a);
  const bool dry_run = r.flag("--dry-run");
  const launcher::state_store store(state_dir(r));
  if (auto rest = r.positionals(); !rest.empty()) r.fail("unexpected argument '" + rest.front() + "'");
  if (r.failed()) return r.usage_error();
  auto end_session = [](const std::string& control, const std::string& session) -> base::result<void> {
    auto client = control::connect_control(control);
    if (!client) return client.error();
    auto totals = (*client)->remove_session(session);
    if (!totals) return totals.error();
    return {};
  };
  const auto report = launcher::collect_garbage(store, end_session, dry_run);
  for (const auto& line : report.removed) std::printf("%s %s\n", dry_run ? "would remove" : "removed", line.c_str());
  for (const auto& line : report.kept) std::printf("kept    %s\n", line.c_str());
  for (const auto& line : report.errors) std::fprintf(stderr, "airlock gc: %s\n", line.c_str());
  if (report.removed.empty() && report.errors.empty()) std::printf("nothing to remove\n");
  return report.errors.empty() ? exit_ok : exit_error;
}

}  // namespace airlock::app
