// `airlock run`: reads the options, picks the daemon (the one on --control, else an
// embedded one) and hands over to launcher::run_sandbox.
#include "app/cli.hpp"
#include "app/launcher_flags.hpp"
#include "base/result.hpp"
#include "control/session_api.hpp"
#include "daemon/embedded.hpp"
#include "launcher/sandbox.hpp"
#include "policy/units.hpp"

#include <cstdio>

namespace airlock::app {
int run_run_command(args a) {
  arg_reader r("run", a);
  launcher::run_options o;
  const auto config = r.value("-c", "--config");
  const auto log = r.value("", "--log");
  const auto control = control_socket(r);
  if (auto v = r.value("", "--policy")) o.policy = *v;
  if (auto v = r.value("", "--session")) o.session_id = *v;
  o.allow = r.values("--allow");
  o.state_dir = state_dir(r);
  o.labels = r.key_values("--label");
  for (const auto& d : r.values("--ro")) o.ro.emplace_back(d);
  for (const auto& d : r.values("--rw")) o.rw.emplace_back(d);
  const bool ro_cwd = r.flag("--ro-cwd"), copy_cwd = r.flag("--copy-cwd"), no_cwd = r.flag("--no-cwd");
  if (static_cast<int>(ro_cwd) + static_cast<int>(copy_cwd) + static_cast<int>(no_cwd) > 1)
    r.fail("--ro-cwd, --copy-cwd and --no-cwd exclude each other");
  o.cwd = ro_cwd     ? launcher::cwd_mode::read_only
          : copy_cwd ? launcher::cwd_mode::copy
          : no_cwd   ? launcher::cwd_mode::none
                     : launcher::cwd_mode::read_write;
  auto quantity = [&](std::string_view flag, auto parse, auto& out) {
    if (auto v = r.value("", flag)) {
      auto p = parse(*v);
      if (p) out = *p;
      else r.fail(std::string(flag) + " " + p.error());
    }
  };
  quantity("--memory", policy::parse_size, o.limits.memory_bytes);
  quantity(
      "--pids", [](std::string_view t) { return policy::parse_count(t, 8, 4194304); }, o.limits.pids);
  quantity("--cpus", policy::parse_cpus, o.limits.cpus);
  quantity("--timeout", policy::parse_duration, o.timeout);
  o.env = r.values("--env");
  if (auto v = r.value("", "--pool")) o.pool = *v;
  if (r.flag("--keep-env"))
    r.fail("--keep-env is not offered (it would hand every secret to CMD); name each variable with --env VAR");
  o.command = r.positionals();
  if (!r.failed() && o.command.empty()) r.fail("no command: airlock run [OPTIONS] -- CMD [ARG...]");
  if (r.failed()) {
    r.usage_error();
    return launcher::exit_setup_failed;  // CMD's statuses are ours to pass on: 2 could be CMD's
  }

  launcher::daemon_source daemons;
  daemons.running = [&]() -> std::optional<launcher::daemon_link> {
    auto client = control::connect_control(control);
    if (!client) {
      std::fprintf(stderr, "airlock: %s; starting an embedded daemon for this sandbox\n", client.error().c_str());
      return std::nullopt;
    }
    if (config)
      std::fprintf(stderr, "airlock: using the daemon at %s; -c %s applies to embedded runs only\n", control.c_str(),
                   config->c_str());
    return launcher::daemon_link{std::move(*client), "the daemon at " + control, control};
  };
  daemons.embedded = [&](const boost::asio::ip::address_v4& gateway) -> base::result<launcher::daemon_link> {
    daemon::embedded_options eo;
    if (config) eo.config_path = *config;
    if (log) eo.decisions_log = *log;
    eo.listen_address = gateway;
    auto embedded = daemon::start_embedded(eo);
    if (!embedded) return "start an embedded daemon: " + embedded.error();
    return launcher::daemon_link{std::move(*embedded), "an embedded daemon", ""};
  };
  return launcher::run_sandbox(o, daemons);
}

}  // namespace airlock::app
