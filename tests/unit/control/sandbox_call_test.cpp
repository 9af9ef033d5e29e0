#include "control/sandbox_call.hpp"

#include <doctest/doctest.h>

using namespace airlock::control;

TEST_CASE("a sandbox call survives the wire whole") {
  sandbox_call call{{"--allow", "example.com", "--", "sh", "-c", "echo \"hi\"\n"}, {"HOME=/home/a", "X=é"}, 2, 077};
  auto back = decode_call(encode(call));
  REQUIRE(back.has_value());
  CHECK(back->args == call.args);
  CHECK(back->env == call.env);
  CHECK(back->paths == 2);
  CHECK(back->umask == 077);
}

TEST_CASE("a sandbox call that is not one, or names too many paths, is refused") {
  CHECK_FALSE(decode_call("").has_value());
  CHECK_FALSE(decode_call("[]").has_value());
  CHECK_FALSE(decode_call(R"({"args":["a"],"env":[],"umask":18})").has_value());
  CHECK_FALSE(decode_call(R"({"args":["a",1],"env":[],"paths":0,"umask":18})").has_value());
  CHECK_FALSE(decode_call(R"({"args":[],"env":[],"paths":-1,"umask":18})").has_value());
  CHECK_FALSE(decode_call(R"({"args":[],"env":[],"paths":33,"umask":18})").has_value());
  CHECK_FALSE(decode_call(R"({"args":[],"env":[],"paths":0,"umask":512})").has_value());
  CHECK(decode_call(R"({"args":[],"env":[],"paths":32,"umask":18})").has_value());
}

TEST_CASE("signals, exit statuses and refusals are told apart") {
  CHECK(decode_signal(signal_message(2)) == 2);
  CHECK_FALSE(decode_signal(R"({"signal":0})").has_value());
  CHECK_FALSE(decode_signal(R"({"signal":65})").has_value());
  CHECK_FALSE(decode_signal(exit_message(2)).has_value());
  auto e = decode_outcome(exit_message(127));
  REQUIRE(e.has_value());
  CHECK(e->exit_status == 127);
  auto r = decode_outcome(error_message("no \"room\""));
  REQUIRE(r.has_value());
  CHECK_FALSE(r->exit_status.has_value());
  CHECK(r->error == "no \"room\"");
  CHECK_FALSE(decode_outcome(R"({"exit":256})").has_value());
  CHECK_FALSE(decode_outcome(signal_message(15)).has_value());
}

TEST_CASE("a sandbox order keeps who called, and refuses what setresuid would read as 'unchanged'") {
  sandbox_order o;
  o.call = {{"--", "id"}, {"PATH=/usr/bin"}, 1, 022};
  o.uid = 1000;
  o.gid = 1001;
  o.groups = {1001, 27};
  o.user = "ada";
  o.control = "/run/airlock/control.sock";
  o.state_dir = "/run/airlock/sandboxes";
  o.pool = "198.18.0.0/15";
  o.first_fd = 4;
  auto back = decode_order(encode(o));
  REQUIRE(back.has_value());
  CHECK(back->uid == 1000);
  CHECK(back->gid == 1001);
  CHECK(back->groups == o.groups);
  CHECK(back->user == "ada");
  CHECK(back->control == o.control);
  CHECK(back->state_dir == o.state_dir);
  CHECK(back->pool == o.pool);
  CHECK(back->first_fd == 4);
  CHECK(back->call.args == o.call.args);
  CHECK(back->call.paths == 1);

  auto text = encode(o);
  auto at = text.find("\"uid\":1000");
  REQUIRE(at != std::string::npos);
  text.replace(at, 10, "\"uid\":4294967295");
  CHECK_FALSE(decode_order(text).has_value());
  CHECK_FALSE(decode_order(R"({"call":{"args":[],"env":[],"paths":0,"umask":18},"uid":1,"gid":1,"groups":[],"user":"a",
                              "control":"c","state_dir":"","pool":"","first_fd":2})")
                  .has_value());
}
