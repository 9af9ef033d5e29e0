// A connection's lines (record/decision_line.hpp, as the proxy uses it): a denial's one line
// on its way out; an allowed connection's decision line when it is decided, and its close
// line (same conn, the rest) at its end, with what the relay saw (steps::relay_outcome).
#include "proxy/limits.hpp"
#include "proxy/steps.hpp"

#include <doctest/doctest.h>

#include <vector>

namespace {

using namespace airlock;
using record::decision_line;

struct collect final : record::decision_sink {
  std::vector<record::decision_record> lines;
  void emit(const record::decision_record& r) noexcept override { lines.push_back(r); }
};

record::decision_record allowed_connection() {
  record::decision_record r;
  r.event = record::event_kind::connect;
  r.conn = 42;
  r.session = "s";
  r.name = "example.com";
  r.verdict = policy::verdict::allow;
  r.reason = policy::reason::host_allowed;
  r.notes = {"name_from_dns_answer"};
  return r;
}

// The lines of an allowed connection judged, handed to the relay and relayed to `totals`
// (after `sent_up` first bytes); the decision must be out before the relay starts.
collect relayed_connection(const proxy::relay_totals& totals, std::uint64_t sent_up) {
  collect sink;
  policy::limits_config l;
  proxy::limiter lim(l);
  auto ticket = lim.accept();
  {
    decision_line relayed(sink);
    {
      record::decision_record r = allowed_connection();
      auto line = proxy::steps::connection_line(sink, r);
      relayed.take(line);
    }
    CHECK(sink.lines.size() == 1);  // the decision, and no second line when the judge returned
    relayed.close(proxy::steps::relay_outcome(totals, sent_up, ticket, nullptr));
  }
  return sink;
}

TEST_CASE("a denial has one line, written on the way out") {
  collect sink;
  {
    record::decision_record r = allowed_connection();
    auto line = proxy::steps::connection_line(sink, r);
    r.verdict = policy::verdict::deny;
    CHECK(sink.lines.empty());
  }
  REQUIRE(sink.lines.size() == 1);
  CHECK(sink.lines[0].event == record::event_kind::connect);
  CHECK(sink.lines[0].duration_ms.has_value());
}

TEST_CASE("a served connection's decision is written when decided, its close at the end with what came after") {
  collect sink;
  {
    record::decision_record r = allowed_connection();
    auto line = proxy::steps::connection_line(sink, r);
    line.decide();
    REQUIRE(sink.lines.size() == 1);
    CHECK(sink.lines[0].event == record::event_kind::connect);
    CHECK(sink.lines[0].notes == std::vector<std::string>{"name_from_dns_answer"});
    CHECK_FALSE(sink.lines[0].bytes_up.has_value());
    line.decide();  // once only
    CHECK(sink.lines.size() == 1);
    r.notes.push_back("requests:2");
    r.bytes_up = 10;
    r.bytes_down = 20;
  }
  REQUIRE(sink.lines.size() == 2);
  const auto& close = sink.lines[1];
  CHECK(close.event == record::event_kind::close);
  CHECK(close.conn == 42);
  CHECK(close.verdict == policy::verdict::allow);
  CHECK(close.notes == std::vector<std::string>{"requests:2"});
  CHECK(close.bytes_up == 10);
  CHECK(close.bytes_down == 20);
  CHECK(close.ts >= sink.lines[0].ts);
}

TEST_CASE("a relayed connection's decision is written when the relay takes it; its close carries the relay's outcome") {
  proxy::relay_totals totals;
  totals.up = 5;
  totals.down = 7;
  totals.idle_timeout = true;
  const auto sink = relayed_connection(totals, 3);
  REQUIRE(sink.lines.size() == 2);
  CHECK(sink.lines[0].event == record::event_kind::connect);
  const auto& close = sink.lines[1];
  CHECK(close.event == record::event_kind::close);
  CHECK(close.conn == 42);
  CHECK(close.name == "example.com");
  CHECK(close.bytes_up == 8);  // the first bytes sent before the relay too
  CHECK(close.bytes_down == 7);
  CHECK(close.notes == std::vector<std::string>{"idle_timeout"});
}

TEST_CASE("a relayed connection cut by a budget closes as a deny that says so") {
  proxy::relay_totals totals;
  totals.cut = true;
  const auto sink = relayed_connection(totals, 0);
  REQUIRE(sink.lines.size() == 2);
  CHECK(sink.lines[0].verdict == policy::verdict::allow);
  CHECK(sink.lines[1].event == record::event_kind::close);
  CHECK(sink.lines[1].verdict == policy::verdict::deny);
  CHECK(sink.lines[1].reason == policy::reason::limit_exceeded);
  CHECK(std::find(sink.lines[1].notes.begin(), sink.lines[1].notes.end(), "cut_open_connection") !=
        sink.lines[1].notes.end());
}

}  // namespace
