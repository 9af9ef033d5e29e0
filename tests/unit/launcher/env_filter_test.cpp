#include "launcher/env_filter.hpp"

#include <doctest/doctest.h>

#include <algorithm>

using airlock::launcher::env_request;
using airlock::launcher::filter_environment;

namespace {

const std::vector<std::string> parent = {
    "PATH=/usr/bin:/bin",
    "HOME=/home/dev",
    "USER=dev",
    "LANG=C.UTF-8",
    "LC_ALL=C.UTF-8",
    "TERM=xterm-256color",
    "SSH_AUTH_SOCK=/run/user/1000/ssh-agent.sock",
    "AWS_ACCESS_KEY_ID=AKIAEXAMPLE",
    "AWS_SECRET_ACCESS_KEY=secret",
    "GOOGLE_APPLICATION_CREDENTIALS=/home/dev/gcp.json",
    "AZURE_CLIENT_SECRET=secret",
    "GITHUB_TOKEN=ghp_example",
    "NPM_TOKEN=npm_example",
    "HTTPS_PROXY=http://proxy:3128",
    "DBUS_SESSION_BUS_ADDRESS=unix:path=/run/user/1000/bus",
    "EDITOR=vim",
};

bool has(const std::vector<std::string>& env, const std::string& entry) {
  return std::find(env.begin(), env.end(), entry) != env.end();
}
bool has_name(const std::vector<std::string>& env, const std::string& name) {
  return std::any_of(env.begin(), env.end(), [&](const std::string& e) { return e.starts_with(name + "="); });
}

}  // namespace

TEST_CASE("only the allowlist passes by default; secrets and sockets stay out") {
  auto env = filter_environment(parent, {});
  REQUIRE(env.has_value());
  CHECK(*env == std::vector<std::string>{"PATH=/usr/bin:/bin", "HOME=/home/dev", "USER=dev", "LANG=C.UTF-8",
                                         "LC_ALL=C.UTF-8", "TERM=xterm-256color"});
  for (const char* secret :
       {"SSH_AUTH_SOCK", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "GOOGLE_APPLICATION_CREDENTIALS",
        "AZURE_CLIENT_SECRET", "GITHUB_TOKEN", "NPM_TOKEN", "HTTPS_PROXY", "DBUS_SESSION_BUS_ADDRESS", "EDITOR"}) {
    CAPTURE(secret);
    CHECK_FALSE(has_name(*env, secret));
  }
}

TEST_CASE("--env VAR passes the parent's value; --env VAR=VALUE sets one") {
  auto env = filter_environment(parent, {{"GITHUB_TOKEN", "CI=true", "NOT_IN_PARENT"}, {}});
  REQUIRE(env.has_value());
  CHECK(has(*env, "GITHUB_TOKEN=ghp_example"));
  CHECK(has(*env, "CI=true"));
  CHECK_FALSE(has_name(*env, "NOT_IN_PARENT"));  // named but unset: stays unset
  CHECK_FALSE(has_name(*env, "NPM_TOKEN"));      // naming one secret does not open the others
  CHECK_FALSE(has_name(*env, "AWS_ACCESS_KEY_ID"));
}

TEST_CASE("--env VAR=VALUE overrides the parent's value, once") {
  auto env = filter_environment(parent, {{"TERM=dumb"}, {}});
  REQUIRE(env.has_value());
  CHECK(has(*env, "TERM=dumb"));
  CHECK(std::count_if(env->begin(), env->end(), [](const std::string& e) { return e.starts_with("TERM="); }) == 1);
}

TEST_CASE("forced values (the CA, the session) win and come last") {
  auto env = filter_environment(parent, {{"SSL_CERT_FILE=/tmp/mine.pem"},
                                         {{"SSL_CERT_FILE", "/run/airlock/ca-bundle.crt"}, {"AIRLOCK_SESSION", "s1"}}});
  REQUIRE(env.has_value());
  CHECK(env->at(env->size() - 2) == "SSL_CERT_FILE=/run/airlock/ca-bundle.crt");
  CHECK(env->back() == "AIRLOCK_SESSION=s1");
  CHECK(std::count_if(env->begin(), env->end(), [](const std::string& e) { return e.starts_with("SSL_CERT_FILE="); }) ==
        1);
}

TEST_CASE("PATH is set when the parent has none") {
  auto env = filter_environment(std::vector<std::string>{"HOME=/root"}, {});
  REQUIRE(env.has_value());
  CHECK(has(*env, "PATH=" + std::string(airlock::launcher::default_path)));
}

TEST_CASE("bad --env names are refused with the argument") {
  for (const char* bad : {"", "=x", "1ABC", "A-B", "A B=1", "AWS_*"}) {
    CAPTURE(bad);
    auto env = filter_environment(parent, {{bad}, {}});
    REQUIRE_FALSE(env.has_value());
    CHECK(env.error() ==
          std::string("--env '") + bad + "': expected VAR or VAR=VALUE, VAR made of letters, digits and _");
  }
}

TEST_CASE("malformed parent entries are skipped") {
  auto env = filter_environment(std::vector<std::string>{"NOEQUALS", "=x", "HOME=/h"}, {});
  REQUIRE(env.has_value());
  CHECK(*env == std::vector<std::string>{"HOME=/h", "PATH=" + std::string(airlock::launcher::default_path)});
}
