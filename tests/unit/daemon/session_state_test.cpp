#include "daemon/session_state.hpp"

#include <doctest/doctest.h>

using namespace airlock::daemon;

TEST_CASE("registered sessions survive a round trip through their file format") {
  persisted_session a;
  a.request = {"sbx-1",
               {"198.18.0.2/32", "2001:db8::2/128"},
               "closed",
               {"example.com:8443"},
               {{"task", "t-1"}, {"repo", "acme/web"}},
               "/run/netns/airlock-1"};
  a.tool_call = "call-42";
  persisted_session b;
  b.request.id = "sbx-2";
  b.request.sources = {"198.18.0.6/32"};
  const auto text = sessions_to_json({a, b});
  const auto back = sessions_from_json(text);
  REQUIRE(back.has_value());
  REQUIRE(back->size() == 2);
  const auto& r = (*back)[0];
  CHECK(r.request.id == "sbx-1");
  CHECK(r.request.sources == a.request.sources);
  CHECK(r.request.policy == "closed");
  CHECK(r.request.allow == a.request.allow);
  CHECK(r.request.labels == a.request.labels);
  CHECK(r.request.netns == a.request.netns);
  CHECK(r.tool_call == "call-42");
  CHECK((*back)[1].request.policy.empty());
  CHECK(sessions_to_json(*back) == text);
}

TEST_CASE("a sessions file that is not what airlock wrote is refused whole") {
  CHECK_FALSE(sessions_from_json("").has_value());
  CHECK_FALSE(sessions_from_json("[]").has_value());
  CHECK(sessions_from_json(R"({"version":2,"sessions":[]})").error() == "not a version 1 sessions file");
  CHECK_FALSE(sessions_from_json(R"({"version":1})").has_value());
  CHECK(sessions_from_json(R"({"version":1,"sessions":[{"id":""}]})").error() == "session 1: malformed");
  CHECK_FALSE(sessions_from_json(R"({"version":1,"sessions":[{"id":"a","sources":"x"}]})").has_value());
  CHECK_FALSE(sessions_from_json(R"({"version":1,"sessions":[{"id":"a","labels":{"k":1}}]})").has_value());
  const auto none = sessions_from_json(R"({"version":1,"sessions":[]})");
  REQUIRE(none.has_value());
  CHECK(none->empty());
}
