#pragma once
// GET /v1/decisions on the control API: the decision feed as a stream, one JSON line per
// decision as it is made (the log's own line, docs/decision-log.md), for `airlock tail` and
// for a harness that reacts to a denial while its tool call still runs.
//
//   GET /v1/decisions?session=ID&deny=1     both parameters optional
//
// Lines a slow reader lost are said in their place, as {"event":"tail_dropped","lines":N};
// a newline alone every 10 s while nothing happens finds a reader that went away. At most
// max_decision_streams at once (503 beyond).
#include "base/result.hpp"
#include "daemon/http_server.hpp"
#include "record/approval_desk.hpp"
#include "record/decision_feed.hpp"

#include <boost/asio/any_io_executor.hpp>

#include <chrono>
#include <cstddef>
#include <memory>
#include <string_view>

namespace airlock::daemon {

inline constexpr std::chrono::seconds decision_stream_heartbeat{10};
// Streams at once: half the control socket's connections, so watchers never crowd out the
// launchers that register sessions.
inline constexpr std::size_t max_decision_streams = 16;

// Approvers at once (GET /v1/approvals): a few people and programs, not a crowd.
inline constexpr std::size_t max_approval_streams = 8;

// The filter a request's query asks for; the message names the parameter that is wrong.
base::result<record::feed_filter> parse_decisions_query(std::string_view target);

// A stream of the feed's lines that pass `f`, subscribed now (a decision made after this
// returns is in it); it runs on `ex`, the control API's loop. Null when
// max_decision_streams are open.
std::shared_ptr<body_stream> stream_decisions(
    boost::asio::any_io_executor ex, record::decision_feed& feed, record::feed_filter f,
    std::chrono::steady_clock::duration heartbeat = decision_stream_heartbeat);

// GET /v1/approvals: the approval desk's questions and their ends, for `session` (empty:
// every session's), the open ones first (record/approval_desk.hpp); lines lost to a slow
// reader said as {"event":"approvals_dropped","lines":N}. While it is open, that session's
// denials for want of a rule are held for an answer. Null when max_approval_streams are open.
std::shared_ptr<body_stream> stream_approvals(
    boost::asio::any_io_executor ex, record::approval_desk& desk, std::string session,
    std::chrono::steady_clock::duration heartbeat = decision_stream_heartbeat);

}  // namespace airlock::daemon
