// What the writer writes, the reader reads back: every event kind, every field, through
// render_json_line (or the log_dropped line) and parse_event.
#include "record/decision.hpp"
#include "record/decision_log.hpp"
#include "record/event.hpp"
#include "unit/record/full_record.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <string>

using namespace airlock;
using record::event_kind;
using record::testing::full;
using record::testing::when;

namespace {

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
