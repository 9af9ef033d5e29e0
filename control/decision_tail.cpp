#include "control/decision_tail.hpp"

#include "control/line_stream.hpp"

namespace airlock::control {

std::string decisions_target(const tail_request& r) {
  std::string t = "/v1/decisions";
  char sep = '?';
  if (!r.session.empty()) {
    t += sep + std::string("session=") + percent_encoded(r.session);
    sep = '&';
  }
  if (r.denials_only) t += sep + std::string("deny=1");
  return t;
}

base::result<void> tail_decisions(const tail_request& r, const std::function<bool(std::string_view)>& on_line) {
  return stream_lines(r.socket_path, decisions_target(r), r.silence_limit, on_line);
}

}  // namespace airlock::control
