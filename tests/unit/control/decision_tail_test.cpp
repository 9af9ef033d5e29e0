#include "control/decision_tail.hpp"

#include <doctest/doctest.h>

using namespace airlock::control;

namespace {
tail_request asking(std::string session, bool denials_only, std::string socket = {}) {
  tail_request r;
  r.socket_path = std::move(socket);
  r.session = std::move(session);
  r.denials_only = denials_only;
  return r;
}
}  // namespace

TEST_CASE("the stream's target: the session escaped, the denials switch") {
  CHECK(decisions_target({}) == "/v1/decisions");
  CHECK(decisions_target(asking("sbx-1", false)) == "/v1/decisions?session=sbx-1");
  CHECK(decisions_target(asking("a b&c=d/é", true)) == "/v1/decisions?session=a%20b%26c%3Dd%2F%C3%A9&deny=1");
  CHECK(decisions_target(asking("", true)) == "/v1/decisions?deny=1");
}

TEST_CASE("no daemon at the socket: said, with the path") {
  const auto r = tail_decisions(asking("", false, "/nonexistent/control.sock"), [](std::string_view) { return true; });
  REQUIRE(r.has_error());
  CHECK(r.error().starts_with("cannot reach the airlock daemon at /nonexistent/control.sock: "));
}
