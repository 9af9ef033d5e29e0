// The one way a line leaves (record/decision_line.hpp), and the packed form a relayed
// connection keeps its close line in (record/packed.hpp).
#include "record/decision_line.hpp"
#include "record/fields.hpp"
#include "record/packed.hpp"
#include "unit/record/full_record.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <string>
#include <utility>
#include <vector>

using namespace airlock;
using record::decision_line;
using record::decision_record;

namespace {

struct collect final : record::decision_sink {
  std::vector<decision_record> lines;
  void emit(const decision_record& r) noexcept override { lines.push_back(r); }
};

using record::testing::when;

// Every field away from its default (record::testing::full), and the edges of packing.
decision_record every_field_set() {
  auto r = record::testing::full(record::event_kind::http);
  r.conn = 300;             // more than one LEB128 byte
  r.status = 0;             // present, and zero: not the same as absent
  r.bytes_up = 1ull << 40;  // a large number
  r.notes.emplace_back();   // an empty string
  return r;
}

}  // namespace

TEST_CASE("pack and unpack give back every field") {
  const auto r = every_field_set();
  const auto back = record::unpack(record::pack(r));
  CHECK(record::render_json_line(back) == record::render_json_line(r));
  CHECK(back.status == 0u);
  CHECK(back.notes == r.notes);
}

TEST_CASE("unpack of bytes pack did not make stops where they end") {
  const auto packed = record::pack(every_field_set());
  for (std::size_t n = 0; n < packed.size(); n += 7) {
    const auto r = record::unpack(std::string_view(packed).substr(0, n));  // must not read past the end
    CHECK(r.connections_denied.value_or(0) <= 3);
  }
  CHECK(record::unpack(std::string(64, '\xff')).notes.size() <= 64);
}

TEST_CASE("reset_for_reuse gives a default record, field by field") {
  auto r = every_field_set();
  record::reset_for_reuse(r);
  decision_record fresh;
  r.ts = fresh.ts = when;
  CHECK(record::render_json_line(r) == record::render_json_line(fresh));
}

TEST_CASE("a line leaves once, as recorded, when its owner's scope ends") {
  collect sink;
  auto r = every_field_set();
  {
    decision_line line(sink, r);
    r.reason = policy::reason::host_allowed;  // what the record says at the end counts
    CHECK(sink.lines.empty());
  }
  REQUIRE(sink.lines.size() == 1);
  CHECK(sink.lines[0].reason == policy::reason::host_allowed);
  CHECK(sink.lines[0].ts == when);            // as recorded: not stamped
  CHECK(sink.lines[0].duration_ms == 1250u);  // full()'s
}

TEST_CASE("a connection's line is stamped as it leaves") {
  collect sink;
  auto r = every_field_set();
  r.duration_ms.reset();
  { decision_line line(sink, r, decision_line::timing::at_exit); }
  REQUIRE(sink.lines.size() == 1);
  CHECK(sink.lines[0].ts > when);
  CHECK(sink.lines[0].duration_ms.has_value());
}

TEST_CASE("a moved line leaves once, from where it went") {
  collect sink;
  auto r = every_field_set();
  {
    decision_line first(sink, r);
    {
      decision_line second(std::move(first));
      CHECK(sink.lines.empty());
    }
    CHECK(sink.lines.size() == 1);
  }
  CHECK(sink.lines.size() == 1);
}

TEST_CASE("a cancelled line does not leave; write() leaves at once") {
  collect sink;
  auto r = every_field_set();
  {
    decision_line line(sink, r);
    line.cancel();
  }
  CHECK(sink.lines.empty());
  decision_line::write(sink, r);
  CHECK(sink.lines.size() == 1);
}

TEST_CASE("a decided line: the decision now, the close line with the notes added since") {
  collect sink;
  auto r = every_field_set();
  r.notes = {"decided"};
  {
    decision_line line(sink, r, decision_line::timing::at_exit);
    line.decide();
    line.decide();  // once only
    REQUIRE(sink.lines.size() == 1);
    CHECK(sink.lines[0].event == record::event_kind::http);
    r.notes.push_back("later");
  }
  REQUIRE(sink.lines.size() == 2);
  CHECK(sink.lines[1].event == record::event_kind::close);
  CHECK(sink.lines[1].notes == std::vector<std::string>{"later"});
  CHECK(sink.lines[1].process_json.empty());  // the decision line named the process
}

TEST_CASE("a taken line: the decision at once, the close line from the packed record with the facts") {
  collect sink;
  decision_line relayed(sink);
  {
    auto r = every_field_set();
    r.verdict = policy::verdict::allow;
    decision_line judged(sink, r, decision_line::timing::at_exit);
    relayed.take(judged);
    CHECK(sink.lines.size() == 1);
  }
  CHECK(sink.lines.size() == 1);  // the judge's line handed its duty over
  relayed.close({.bytes_up = 11, .bytes_down = 22, .notes = {"idle_timeout"}, .cut = true, .budget = "session_bytes"});
  { decision_line gone(std::move(relayed)); }
  REQUIRE(sink.lines.size() == 2);
  const auto& close = sink.lines[1];
  CHECK(close.event == record::event_kind::close);
  CHECK(close.name == "registry.npmjs.org");  // as full() names it
  CHECK(close.bytes_up == 11u);
  CHECK(close.bytes_down == 22u);
  CHECK(close.verdict == policy::verdict::deny);  // a cut is a deny
  CHECK(close.reason == policy::reason::limit_exceeded);
  CHECK(close.notes == std::vector<std::string>{"idle_timeout", "limit:session_bytes", "cut_open_connection"});
}

TEST_CASE("an empty line owes nothing") {
  collect sink;
  { decision_line line(sink); }
  CHECK(sink.lines.empty());
}
