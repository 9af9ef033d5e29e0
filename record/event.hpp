#pragma once
// One decision-log line as a value (docs/decision-log.md is the shape). Fields a line does
// not carry stay empty, so older lines (no labels, tool_call or process) read the same way.
#include "record/decision.hpp"

#include <boost/json/object.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace airlock::record {

struct process_step {
  std::optional<std::int64_t> pid;
  std::string comm;
  std::string cmdline;
};

struct process_info {
  std::optional<std::int64_t> pid;
  std::string comm;
  std::string cmdline;
  std::vector<process_step> chain;  // as logged: the process first, then its parents
  std::string unknown;              // the lookup was tried and failed: the cause

  // "npm install -> sh -> node -> curl": the chain oldest ancestor first (the process's
  // own comm when there is no chain); empty when the process is unknown.
  std::string lineage() const;
};

struct event {
  boost::json::object line;  // the whole line as parsed, unknown fields included
  std::string ts;
  std::optional<std::int64_t> ts_us;  // `ts` in microseconds since the epoch, when it parses
  event_kind kind = event_kind::other;
  std::string session;
  std::vector<std::pair<std::string, std::string>> labels;
  std::string tool_call;
  std::string client, name, dst, upstream, proto, verdict, reason, rule, policy, policy_version;
  std::optional<std::uint64_t> conn;
  std::string qtype, rcode;
  std::vector<std::string> answers;
  // `http` events
  std::string method, path;
  std::optional<std::uint64_t> status;
  std::optional<std::uint64_t> bytes_up, bytes_down, duration_ms;
  std::vector<std::string> notes;
  std::optional<process_info> process;
  // `session` events
  std::string action;  // open | close
  std::string mode;    // enforce | audit
  std::vector<std::string> sources;
  std::optional<std::uint64_t> dns_queries, connections_allowed, connections_denied;
  // `log_dropped`
  std::optional<std::uint64_t> count;

  bool is_decision() const {
    return kind == event_kind::dns || kind == event_kind::connect || kind == event_kind::http;
  }
  // A close line that is a deny: the connection was cut (a budget), not merely ended.
  bool is_cut() const { return kind == event_kind::close && denied(); }
  bool denied() const { return verdict == "deny" || verdict == "audit-deny"; }
  bool has_note(std::string_view note) const;
};

// One line (without its newline) -> an event; nullopt when it is not a JSON object with
// a string `event`. Never throws.
std::optional<event> parse_event(std::string_view line);

// "2026-12-02T14:21:16.123456Z" -> microseconds since the epoch (UTC, 'Z' or +00:00 only).
std::optional<std::int64_t> parse_ts(std::string_view ts);

// "198.51.100.7:443" -> "198.51.100.7"; "[2001:db8::1]:443" -> "2001:db8::1".
std::string_view address_part(std::string_view ip_port);
std::optional<std::uint16_t> port_part(std::string_view ip_port);

// Text that is safe to print to a terminal or into a YAML comment: printable ASCII as
// is, every other byte (control characters, escape sequences, non-ASCII) as \xNN.
std::string printable(std::string_view s);

}  // namespace airlock::record
