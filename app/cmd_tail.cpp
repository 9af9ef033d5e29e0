// `airlock tail`: the daemon's decisions as they are made.
#include "app/cli.hpp"
#include "app/launcher_flags.hpp"
#include "control/decision_tail.hpp"
#include "evidence/story.hpp"
#include "record/event.hpp"

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <unistd.h>

namespace airlock::app {

int run_tail_command(args a) {
  arg_reader r("tail", a);
  control::tail_request req;
  req.socket_path = control_socket(r);
  if (auto v = r.value("", "--session")) {
    if (v->empty()) r.fail("--session: expected a session id");
    req.session = *v;
  }
  req.denials_only = r.flag("--deny");
  const bool as_json = r.flag("--json");
  if (auto rest = r.positionals(); !rest.empty()) r.fail("unexpected argument '" + rest.front() + "'");
  if (r.failed()) return r.usage_error();

  // A reader that quit (`| head`, a pager) is how a tail usually ends: an error on write, not a signal.
  std::signal(SIGPIPE, SIG_IGN);
  const char* no_colour = std::getenv("NO_COLOR");
  evidence::line_renderer render({isatty(STDOUT_FILENO) && (!no_colour || !*no_colour)});
  auto shown = control::tail_decisions(req, [&](std::string_view line) {
    auto ev = record::parse_event(line);
    if (ev && ev->kind == record::event_kind::other && ev->line.at("event").as_string() == "tail_dropped") {
      const auto* n = ev->line.if_contains("lines");
      std::fprintf(stderr, "airlock tail: %s lines lost here (this reader was slower than the decisions)\n",
                   n && n->is_int64() ? std::to_string(n->as_int64()).c_str() : "some");
      return true;
    }
    std::string out;
    if (as_json || !ev) out = std::string(line) + "\n";
    else out = render.render(*ev);
    return std::fwrite(out.data(), 1, out.size(), stdout) == out.size() && std::fflush(stdout) == 0;
  });
  if (!shown) {
    std::fprintf(stderr, "airlock tail: %s\n", shown.error().c_str());
    return exit_error;
  }
  return exit_ok;
}

}  // namespace airlock::app
