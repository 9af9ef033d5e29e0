// What the writer writes, the reader reads back: every event kind, every field, through
// render_json_line (or the log_dropped line) and parse_event.
#include "record/decision.hpp"
#include "record/decision_log.hpp"
#include "record/event.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <string>

using namespace airlock;
using record::event_kind;

namespace {

const auto when = std::chrono::system_clock::time_point(std::chrono::microseconds(1764676800123456));

// A record with every field set to a value of its own, as `kind` would carry it.
record::decision_record full(event_kind kind) {
  record::decision_record r;
  r.ts = when;
  r.event = kind;
  r.session = "sbx \"7\"";
  r.labels = {{"repo", "acme/web"}, {"task", "deps\n"}};
  r.tool_call = "call_01";
  r.client = "198.51.100.2:41000";
  r.name = "registry.npmjs.org";
  r.dst = "203.0.113.10:443";
  r.upstream = "203.0.113.10:443";
  r.proto = kind == event_kind::dns ? "dns" : "tls";
  r.verdict = policy::verdict::audit_deny;
  r.reason = policy::reason::host_not_allowed;
  r.rule = "airlock.yaml:14";
  r.conn = kind == event_kind::dns ? 0 : 42;
  r.policy = "agent";
  r.policy_version = "9c1e";
  r.qtype = "AAAA";
  r.rcode = "NOERROR";
  r.answers = {"2001:db8::1", "203.0.113.10"};
  r.method = "GET";
  r.path = "/a?b=c";
  r.status = 403;
  r.bytes_up = 1300;
  r.bytes_down = 3565158;
  r.duration_ms = 1250;
  r.process_json =
      R"({"pid":4201,"comm":"npm","cmdline":"npm install","chain":[{"pid":4201,"comm":"npm","cmdline":"npm install"},{"pid":1,"comm":"sh","cmdline":"sh"}]})";
  r.notes = {"ech", "requests:2"};
  r.action = "close";
  r.mode = "audit";
  r.sources = {"198.51.100.2/32"};
  r.dns_queries = 5;
  r.connections_allowed = 2;
  r.connections_denied = 3;
  return r;
}

record::event read_back(const std::string& line) {
  REQUIRE(line.ends_with('\n'));
  auto e = record::parse_event(std::string_view(line).substr(0, line.size() - 1));
  REQUIRE(e);
  return *e;
}

// What every kind carries: when, which session, its labels and tool call.
void check_common(const record::event& e, const record::decision_record& r) {
  CHECK(e.kind == r.event);
  CHECK(e.ts_us == std::chrono::duration_cast<std::chrono::microseconds>(r.ts.time_since_epoch()).count());
  CHECK(e.session == r.session);
  CHECK(e.labels == r.labels);
  CHECK(e.tool_call == r.tool_call);
}

// What every decision and close line carries.
void check_decision(const record::event& e, const record::decision_record& r) {
  CHECK(e.client == r.client);
  CHECK(e.name == r.name);
  CHECK(e.dst == r.dst);
  CHECK(e.upstream == r.upstream);
  CHECK(e.proto == r.proto);
  CHECK(e.verdict == policy::to_string(r.verdict));
  CHECK(e.reason == policy::to_string(r.reason));
  CHECK(e.rule == r.rule);
  CHECK(e.policy == r.policy);
  CHECK(e.policy_version == r.policy_version);
  CHECK(e.notes == r.notes);
  REQUIRE(e.process);
  CHECK(e.process->pid == 4201);
  CHECK(e.process->comm == "npm");
  CHECK(e.process->lineage() == "sh -> npm");
}

void check_totals(const record::event& e, const record::decision_record& r) {
  CHECK(e.bytes_up == r.bytes_up);
  CHECK(e.bytes_down == r.bytes_down);
  CHECK(e.duration_ms == r.duration_ms);
}

}  // namespace

TEST_CASE("a dns line reads back whole") {
  const auto r = full(event_kind::dns);
  const auto e = read_back(record::render_json_line(r));
  check_common(e, r);
  check_decision(e, r);
  CHECK(!e.conn);  // a query is not a connection
  CHECK(e.qtype == r.qtype);
  CHECK(e.rcode == r.rcode);
  CHECK(e.answers == r.answers);
  CHECK(e.is_decision());
}

TEST_CASE("connect and close lines read back whole") {
  for (auto kind : {event_kind::connect, event_kind::close}) {
    CAPTURE(record::to_string(kind));
    const auto r = full(kind);
    const auto e = read_back(record::render_json_line(r));
    check_common(e, r);
    check_decision(e, r);
    check_totals(e, r);
    CHECK(e.conn == r.conn);
    CHECK(e.answers.empty());  // a dns field, not written here
    CHECK(e.method.empty());
    CHECK(e.is_decision() == (kind == event_kind::connect));
    CHECK(e.is_cut() == (kind == event_kind::close));  // an audit-deny close is a cut
  }
}

TEST_CASE("an http line reads back whole") {
  const auto r = full(event_kind::http);
  const auto e = read_back(record::render_json_line(r));
  check_common(e, r);
  check_decision(e, r);
  check_totals(e, r);
  CHECK(e.conn == r.conn);
  CHECK(e.method == r.method);
  CHECK(e.path == r.path);
  CHECK(e.status == r.status);
}

TEST_CASE("a session line reads back whole, without decision fields") {
  const auto r = full(event_kind::session);
  const auto e = read_back(record::render_json_line(r));
  check_common(e, r);
  CHECK(e.action == r.action);
  CHECK(e.policy == r.policy);
  CHECK(e.mode == r.mode);
  CHECK(e.sources == r.sources);
  CHECK(e.dns_queries == r.dns_queries);
  CHECK(e.connections_allowed == r.connections_allowed);
  CHECK(e.connections_denied == r.connections_denied);
  check_totals(e, r);
  CHECK(e.verdict.empty());
  CHECK(e.client.empty());
  CHECK(!e.process);
  CHECK(!e.is_decision());
}

TEST_CASE("a log_dropped line reads back with its count") {
  const auto e = read_back(record::render_log_dropped_line(17, when));
  CHECK(e.kind == event_kind::log_dropped);
  CHECK(e.ts_us == 1764676800123456);
  CHECK(e.count == 17u);
  CHECK(!e.is_decision());
}

TEST_CASE("every kind the writer names, the reader knows") {
  for (auto kind : {event_kind::dns, event_kind::connect, event_kind::http, event_kind::session, event_kind::close}) {
    CAPTURE(record::to_string(kind));
    CHECK(read_back(record::render_json_line(full(kind))).kind == kind);
  }
}
