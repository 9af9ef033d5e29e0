#pragma once
// One decision, as the log contract has it (docs/decision-log.md). Filled in as a
// connection or query goes; rendered once, as one JSON line.
#include "policy/reason.hpp"

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace airlock::record {

// `close` ends an allowed connection whose `connect` line was written when it was decided:
// same `conn`, with the bytes, the duration and what happened meanwhile. Not a decision,
// except for a connection a budget cut (then a deny, limit_exceeded). `log_dropped` says
// how many lines the writer lost; `other` is what a reader makes of an event it does not
// know (a newer writer's).
// `grant` says a session was given a grant at run time (action add) or that it ended (end).
enum class event_kind : std::uint8_t { dns, connect, http, session, close, log_dropped, grant, other };

// The `schema` field of every line: 2 since a connection's line is written when it is
// decided and its totals come in a `close` line (1: one line at the end, no field).
inline constexpr unsigned log_schema_version = 2;

using label_list = std::vector<std::pair<std::string, std::string>>;

struct decision_record {
  std::chrono::system_clock::time_point ts = std::chrono::system_clock::now();
  event_kind event = event_kind::connect;
  std::string session;
  // Stamped from the session registry as the line is emitted (daemon::accounting): the
  // data path never handles them, and the sandbox cannot set them.
  label_list labels;
  std::string tool_call;
  std::string client;    // ip:port
  std::string name;      // qname, SNI or Host
  std::string dst;       // the client's original destination
  std::string upstream;  // where airlock connected
  std::string proto;     // dns, tls, http, tcp, connect
  policy::verdict verdict = policy::verdict::deny;
  policy::reason reason = policy::reason::internal_error;
  std::string rule = "default";
  std::uint64_t conn = 0;
  std::string policy;          // the policy that decided
  std::string policy_version;  // its snapshot's content hash
  // dns only
  std::string qtype;
  std::string rcode;
  std::vector<std::string> answers;
  // http only (one line per request on a connection airlock serves itself)
  std::string method;
  std::string path;                // the request target as sent, '?' and all
  std::optional<unsigned> status;  // what the client was answered
  // http requests, and connections on their close line; a connection's decision line
  // carries in duration_ms how long deciding took
  std::optional<std::uint64_t> bytes_up;
  std::optional<std::uint64_t> bytes_down;
  std::optional<std::uint64_t> duration_ms;
  // The owning process as a JSON object (docs/decision-log.md "process"), already
  // rendered by the attribution; empty: not looked up (null in the line).
  std::string process_json;
  // free-form facts worth keeping, e.g. "ech" when the ClientHello carried ECH
  std::vector<std::string> notes;
  // session and grant events
  std::string action;  // session: open, close; grant: add, end
  std::string mode;    // the session's policy mode: enforce, audit
  std::vector<std::string> sources;
  std::optional<std::uint64_t> dns_queries;
  std::optional<std::uint64_t> connections_allowed;
  std::optional<std::uint64_t> connections_denied;
};

// `r` as a default-constructed record (stamped now), keeping the memory its strings and
// lists hold: for a caller that fills one record after another.
void reset_for_reuse(decision_record& r);

// The record as one JSON object and a newline. Every contract field is present (null
// when it does not apply) so readers never guess; bytes outside printable ASCII are
// escaped, so a hostile SNI cannot break the line or the encoding.
std::string render_json_line(const decision_record& r);
// The same line appended to `out` (the log writer renders straight into its batch).
void append_json_line(std::string& out, const decision_record& r);

// Where decisions go. The daemon's decision_log implements it; tests collect records.
class decision_sink {
 public:
  virtual ~decision_sink() = default;
  virtual void emit(const decision_record& r) noexcept = 0;
  // False while what is emitted is not being recorded (the log's queue is full, or its disk
  // refuses writes): a daemon that fails closed admits nothing new meanwhile.
  virtual bool recording() const noexcept { return true; }
};

std::string_view to_string(event_kind e) noexcept;

}  // namespace airlock::record
