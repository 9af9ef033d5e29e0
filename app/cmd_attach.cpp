// `airlock attach` and `airlock detach`: a namespace made by someone else, behind airlock.
#include "app/cli.hpp"
#include "app/launcher_flags.hpp"
#include "base/result.hpp"
#include "control/session_api.hpp"
#include "launcher/attach.hpp"

#include <cstdio>

namespace airlock::app {
namespace {

base::result<void> end_session(const std::string& control, const std::string& session) {
  auto client = control::connect_control(control);
  if (!client) return client.error();
  if (auto t = (*client)->remove_session(session); !t) return t.error();
  return {};
}

}  // namespace

int run_attach_command(args a) {
  arg_reader r("attach", a);
  launcher::attach_options o;
  const auto netns = r.value("", "--netns");
  o.control = control_socket(r);
  if (auto v = r.value("", "--policy")) o.policy = *v;
  if (auto v = r.value("", "--session")) o.session_id = *v;
  if (auto v = r.value("", "--pool")) o.pool = *v;
  const launcher::state_store store(state_dir(r));
  o.allow = r.values("--allow");
  o.labels = r.key_values("--label");
  if (auto rest = r.positionals(); !rest.empty()) r.fail("unexpected argument '" + rest.front() + "'");
  if (!netns) r.fail("--netns PATH|NAME is required");
  if (r.failed()) return r.usage_error();
  o.netns = *netns;
  // An attachment outlives this command, so it needs a daemon that does too: no embedded one.
  auto daemon = control::connect_control(o.control);
  if (!daemon) {
    std::fprintf(stderr, "airlock attach: no daemon at %s: %s; start 'airlock daemon' with a control socket first\n",
                 o.control.c_str(), daemon.error().c_str());
    return exit_error;
  }
  auto rec = launcher::attach(o, **daemon, store);
  if (!rec) {
    std::fprintf(stderr, "airlock attach: %s; nothing was left attached\n", rec.error().c_str());
    return exit_error;
  }
  std::printf("%s\n", rec->session.c_str());
  std::fprintf(
      stderr, "airlock: attached %s as session %s (address %s, gateway %s); 'airlock detach --netns %s' undoes it\n",
      o.netns.c_str(), rec->session.c_str(), rec->sandbox_ip.c_str(), rec->gateway_ip.c_str(), o.netns.c_str());
  // `airlock run` hands CMD the inspection CA; a container's filesystem is not airlock's to
  // change, so say which file its workload must trust.
  if (auto ports = (*daemon)->listeners(); ports && !ports->inspection_ca.empty())
    std::fprintf(stderr,
                 "airlock: the daemon inspects TLS for some rules: the workload in %s must trust %s "
                 "(airlock cannot place it in a container's filesystem)\n",
                 o.netns.c_str(), ports->inspection_ca.c_str());
  return exit_ok;
}

int run_detach_command(args a) {
  arg_reader r("detach", a);
  const auto netns = r.value("", "--netns");
  const launcher::state_store store(state_dir(r));
  if (auto rest = r.positionals(); !rest.empty()) r.fail("unexpected argument '" + rest.front() + "'");
  if (!netns) r.fail("--netns PATH|NAME is required");
  if (r.failed()) return r.usage_error();
  std::vector<std::string> warnings;
  auto rec = launcher::detach(*netns, end_session, &warnings, store);
  for (const auto& w : warnings) std::fprintf(stderr, "airlock detach: %s\n", w.c_str());
  if (!rec) {
    std::fprintf(stderr, "airlock detach: %s\n", rec.error().c_str());
    return rec.error().find("is not attached") != std::string::npos ? exit_usage : exit_error;
  }
  std::fprintf(stderr, "airlock: detached %s (session %s)\n", netns->c_str(), rec->session.c_str());
  return exit_ok;
}

}  // namespace airlock::app
