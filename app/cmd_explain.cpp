// `airlock explain` and the log reading both log commands share.
#include "app/cli.hpp"
#include "evidence/story.hpp"
#include "policy/config.hpp"
#include "record/log_reader.hpp"

#include <boost/json/serialize.hpp>

#include <cstdio>
#include <cstdlib>
#include <unistd.h>

namespace airlock::app {

// Reads SESSION's lines from --log (or the default log); prints why it failed and
// returns the exit code when there is nothing to show.
std::optional<record::session_log> read_session_for(std::string_view command, const std::optional<std::string>& log,
                                                    const std::string& session, int& status) {
  const std::string path = log.value_or(std::string(policy::default_decisions_log));
  auto read = record::read_session(path, session);
  if (!read.has_value()) {
    std::fprintf(stderr, "airlock %.*s: %s\n", static_cast<int>(command.size()), command.data(), read.error().c_str());
    status = exit_usage;
    return std::nullopt;
  }
  if (read->events.empty()) {
    std::fprintf(stderr, "airlock %.*s: no line for session '%s' in %s (%zu lines read)\n",
                 static_cast<int>(command.size()), command.data(), record::printable(session).c_str(), path.c_str(),
                 read->lines);
    status = exit_error;
    return std::nullopt;
  }
  return std::move(*read);
}

int run_explain_command(args a) {
  arg_reader r("explain", a);
  const auto log = r.value("", "--log");
  const bool as_json = r.flag("--json");
  const auto rest = r.positionals();
  if (rest.size() != 1) r.fail(rest.empty() ? "expected a SESSION id" : "expected exactly one SESSION id");
  if (r.failed()) return r.usage_error();
  int status = exit_ok;
  auto lines = read_session_for("explain", log, rest.front(), status);
  if (!lines) return status;
  const auto story = evidence::build_story(std::move(*lines));
  std::string out;
  if (as_json) {
    out = boost::json::serialize(evidence::to_json(story)) + "\n";
  } else {
    const char* no_colour = std::getenv("NO_COLOR");
    const bool colour = isatty(STDOUT_FILENO) && (!no_colour || !*no_colour);
    out = evidence::render_text(story, {colour});
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  return exit_ok;
}

}  // namespace airlock::app
