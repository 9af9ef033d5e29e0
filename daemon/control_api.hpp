#pragma once
// The control API: HTTP/1.1 + JSON on a unix socket only the daemon's owner can open
// (mode 0600). Launchers and agent runtimes register, inspect and remove sessions, set
// a session's current tool call and labels, reload the policy and read stats.
//
//   GET    /v1/info                   listeners, policy version, decision log path, inspection CA
//   GET    /v1/sessions               every session with its totals
//   POST   /v1/sessions               {"id"?, "sources": [CIDR], "policy"?, "allow"?: [HOST[:PORT]],
//                                      "labels"?: {K: V}, "netns"?: PATH}  -> 201 {"id"}
//   GET    /v1/sessions/ID            one session
//   DELETE /v1/sessions/ID            -> its totals (and a session close line in the log)
//   PUT    /v1/sessions/ID/context    {"tool_call"?: S, "labels"?: {K: V}}; a new tool call ends the
//                                     grants made "tool_call": true under the last one
//   POST   /v1/sessions/ID/grants     {"allow": HOST[:PORT] | *.SUFFIX[:PORT] | family:NAME,
//                                      "tool_call"?: true, "session"?: true, "for"?: SECONDS | "10m",
//                                      "connections"?: N,
//                                      "cut"?: bool, "by"?: S}  -> 201 the grant
//   GET    /v1/sessions/ID/grants     -> {"grants": [...]}
//   DELETE /v1/sessions/ID/grants/GID -> {"id", "cut": connections cut}
//   POST   /v1/reload                 -> {"policy_version", "rules"} or 422 {"error", "errors": [FILE:LINE:COL: ...]}
//   GET    /v1/stats                  active connections, sessions, log queue and drops, watchers
//   GET    /v1/decisions?session=ID&deny=1   decisions as they are made, one JSON line each,
//                                     chunked until the client goes (decision_stream.hpp)
//   GET    /v1/approvals?session=ID   the approval questions (denials held for an answer) and
//                                     their ends, as a stream; an open stream is an approver
//   POST   /v1/approvals/QID          {"answer": "allow-once" | "allow-session" | "deny", "by"?: S}
//                                     -> {"id", "answer", "grant", "held"} (approval_answer.hpp)
#include "base/result.hpp"
#include "daemon/http_server.hpp"
#include "daemon/metrics.hpp"
#include "daemon/session_registry.hpp"
#include "record/approval_desk.hpp"
#include "record/decision_feed.hpp"

#include <functional>

namespace airlock::daemon {

struct control_hooks {
  session_registry& registry;
  std::function<registry_result<std::shared_ptr<const policy::snapshot>>()> reload;
  std::function<std::string()> info_json;  // the body of GET /v1/info
  std::function<metrics_sample()> sample;
  std::function<std::shared_ptr<body_stream>(record::feed_filter)> decisions;
  // The approval desk (null: this daemon holds nothing for approval) and its streams.
  record::approval_desk* approvals = nullptr;
  std::function<std::shared_ptr<body_stream>(std::string session)> approval_stream;
};

http_handler make_control_handler(control_hooks hooks);

// Turns a POST /v1/sessions body into a request; the message says which field is wrong.
base::result<control::session_request> parse_session_request(std::string_view body);
// The same for POST /v1/sessions/ID/grants.
base::result<grant_request> parse_grant_request(std::string_view body);
std::string totals_json(const control::session_totals& t);

}  // namespace airlock::daemon
