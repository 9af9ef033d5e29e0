// `airlock suggest`: the policy a session's log shows it needed, as YAML for review.
#include "app/cli.hpp"
#include "evidence/suggest.hpp"
#include "record/log_reader.hpp"

#include <cstdio>

namespace airlock::app {

std::optional<record::session_log> read_session_for(std::string_view command, const std::optional<std::string>& log,
                                                    const std::string& session, int& status);

int run_suggest_command(args a) {
  arg_reader r("suggest", a);
  const auto log = r.value("", "--log");
  const auto rest = r.positionals();
  if (rest.size() != 1) r.fail(rest.empty() ? "expected a SESSION id" : "expected exactly one SESSION id");
  if (r.failed()) return r.usage_error();
  int status = exit_ok;
  auto lines = read_session_for("suggest", log, rest.front(), status);
  if (!lines) return status;
  const auto yaml = evidence::render_yaml(evidence::suggest(lines->events), lines->path);
  std::fwrite(yaml.data(), 1, yaml.size(), stdout);
  if (lines->unparseable)
    std::fprintf(stderr, "airlock suggest: %zu unparseable line%s ignored\n", lines->unparseable,
                 lines->unparseable == 1 ? "" : "s");
  return exit_ok;
}

}  // namespace airlock::app
