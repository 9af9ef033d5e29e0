#include "evidence/approval_prompt.hpp"

#include <doctest/doctest.h>

using namespace airlock::evidence;

namespace {

constexpr std::string_view question_line =
    R"({"event":"approval","id":"a3","session":"task-17","name":"files.example.org","port":443,"wait_ms":10000,)"
    R"("expires_in_ms":9000,"expires_at_ms":1796634662118,"decision":{"ts":"2026-12-07T10:31:02.118000Z","schema":2,)"
    R"("event":"connect","session":"task-17","labels":{},"tool_call":"call-41","client":"198.51.100.2:4000",)"
    R"("name":"files.example.org","dst":"203.0.113.10:443","upstream":null,"proto":"tls","verdict":"deny",)"
    R"("reason":"host_not_allowed","rule":"default","conn":7,"policy":"p","policy_version":"x","process":null,)"
    R"("bytes_up":null,"bytes_down":null,"duration_ms":null}})";

}  // namespace

TEST_CASE("a question line: who wants what, and the denial as tail shows it") {
  auto q = parse_approval_question(question_line);
  REQUIRE(q);
  CHECK(q->id == "a3");
  CHECK(q->session == "task-17");
  CHECK(q->port == 443);
  CHECK(q->expires_at_ms == 1796634662118);
  REQUIRE(q->decision);
  CHECK(q->decision->tool_call == "call-41");
  const auto text = approval_prompt(*q, false);
  CHECK(text.find("airlock: task-17 wants files.example.org:443 in tool call call-41 (a connection) [a3]\n") == 0);
  CHECK(text.find("DENY host_not_allowed (rule default)") != std::string::npos);
  CHECK(text.ends_with("allow once [o], for the session [s], or deny [D]? (9 s) "));
  CHECK(approval_prompt(*q, true).find("\x1b[1m") != std::string::npos);
  CHECK(approval_prompt(*q, false).find('\x1b') == std::string::npos);
}

TEST_CASE("a DNS question has no port; other lines are no questions") {
  auto q = parse_approval_question(R"({"event":"approval","id":"a1","session":"s","name":"x.test","port":null})");
  REQUIRE(q);
  CHECK(q->port == 0);
  CHECK(approval_prompt(*q, false).find("wants x.test (a DNS lookup)") != std::string::npos);
  CHECK_FALSE(parse_approval_question(R"({"event":"approval_end","id":"a1"})"));
  CHECK_FALSE(parse_approval_question(R"({"event":"approval","session":"s"})"));  // no id
  CHECK_FALSE(parse_approval_question("not json"));
  CHECK(approval_end_id(R"({"event":"approval_end","id":"a1"})") == "a1");
  CHECK_FALSE(approval_end_id(R"({"event":"approval","id":"a1"})"));
}

TEST_CASE("replies: the short and long forms, deny by default, anything else asked again") {
  CHECK(parse_approval_reply("o") == "allow-once");
  CHECK(parse_approval_reply(" Once\r") == "allow-once");
  CHECK(parse_approval_reply("allow-session") == "allow-session");
  CHECK(parse_approval_reply("S") == "allow-session");
  CHECK(parse_approval_reply("") == "deny");
  CHECK(parse_approval_reply("d") == "deny");
  CHECK(parse_approval_reply("no") == "deny");
  CHECK_FALSE(parse_approval_reply("yes"));
  CHECK_FALSE(parse_approval_reply("maybe"));
}
