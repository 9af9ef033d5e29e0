#pragma once
// The reading side of the control API's streams: GET a target on the daemon's unix socket
// and take its chunked answer line by line, as it comes. Blocking: the callers (airlock
// tail, airlock approve) have nothing else to do meanwhile.
#include "base/result.hpp"

#include <chrono>
#include <functional>
#include <string>
#include <string_view>

namespace airlock::control {

// A descriptor watched while the stream is quiet (a terminal's stdin): when it turns
// readable, `ready` is called, which reads it; false ends the stream (success).
struct stream_watch {
  int fd = -1;
  std::function<bool()> ready{};
};

// Calls `on_line` with each line (without its newline; heartbeats skipped) until the
// daemon ends the stream (an error: it stopped) or `on_line` returns false (success). A
// daemon that refuses is an error with its message; one silent for `silence_limit` too.
base::result<void> stream_lines(const std::string& socket_path, const std::string& target,
                                std::chrono::seconds silence_limit,
                                const std::function<bool(std::string_view)>& on_line, const stream_watch& also = {});

// `s` as a query string's value: unreserved bytes as they are, the rest %XX.
std::string percent_encoded(std::string_view s);

}  // namespace airlock::control
