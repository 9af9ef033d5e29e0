#pragma once
// The reading side of GET /v1/decisions: the daemon's decisions, one JSON line at a time,
// as they are made (control/line_stream.hpp). A daemon silent for longer than three of its
// heartbeats is taken for hung.
#include "base/result.hpp"

#include <chrono>
#include <functional>
#include <string>
#include <string_view>

namespace airlock::control {

struct tail_request {
  std::string socket_path;
  std::string session;  // empty: every session
  bool denials_only = false;
  std::chrono::seconds silence_limit{30};
};

// The query GET /v1/decisions takes for `r`: "/v1/decisions?session=ID&deny=1".
std::string decisions_target(const tail_request& r);

// GET /v1/decisions: calls `on_line` with each line (without its newline; heartbeats skipped) until the daemon
// ends the stream (an error: the daemon stopped) or `on_line` returns false (success).
base::result<void> tail_decisions(const tail_request& r, const std::function<bool(std::string_view)>& on_line);

}  // namespace airlock::control
