#pragma once
// The sessions registered at run time, as the daemon keeps them across its own restarts:
// one JSON document (version 1) with each session's request (id, sources, policy, extra
// allowances, labels, netns) and its current tool call. Pure: the registry writes it with
// base/small_file.hpp after every change and reads it once at start.
#include "base/result.hpp"
#include "control/session_api.hpp"

#include <string>
#include <string_view>
#include <vector>

namespace airlock::daemon {

struct persisted_session {
  control::session_request request;  // its id always set
  std::string tool_call;
};

std::string sessions_to_json(const std::vector<persisted_session>& sessions);
// The sessions of a document sessions_to_json wrote; an error naming what is wrong.
base::result<std::vector<persisted_session>> sessions_from_json(std::string_view text);

}  // namespace airlock::daemon
