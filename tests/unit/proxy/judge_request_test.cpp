#include "proxy/judge.hpp"

#include "policy/snapshot.hpp"

#include <doctest/doctest.h>

using namespace airlock;
using policy::reason;
using policy::verdict;

namespace {

std::shared_ptr<const policy::snapshot> snap() {
  auto cfg = policy::load_config_text(R"(version: 1
inspection:
  ca_dir: /ca
policies:
  p:
    allow:
      - host: ws.example
        inspect: true
        paths: [/echo]
)",
                                      "t.yaml");
  REQUIRE(cfg.has_value());
  auto s = policy::snapshot::compile(*cfg);
  REQUIRE(s.has_value());
  return *s;
}

proxy::http_head::request upgrade_to(std::string method, std::string target, std::string upgrade) {
  proxy::http_head::request r;
  r.method = std::move(method);
  r.target = std::move(target);
  r.host = "ws.example";
  r.upgrade = std::move(upgrade);
  return r;
}

}  // namespace

TEST_CASE("a WebSocket upgrade is judged as its GET where airlock serves the exchange, refused elsewhere") {
  const auto s = snap();
  const auto& p = *s->find_policy("p");
  const auto name = *policy::domain_name::parse("ws.example");
  std::string plain_host;
  const proxy::request_scope served{p, name, 443, true, false, std::nullopt, {}, nullptr, true};
  const proxy::request_scope relayed{p, name, 80, false, false, std::nullopt, {}, nullptr, false};

  auto ok = proxy::judge_request(upgrade_to("GET", "/echo", "WebSocket"), served, 0, plain_host);
  CHECK(ok.verdict == verdict::allow);
  CHECK(ok.websocket);
  CHECK(ok.switching);
  auto path = proxy::judge_request(upgrade_to("GET", "/other", "websocket"), served, 0, plain_host);
  CHECK(path.verdict == verdict::deny);
  CHECK(path.reason == reason::path_not_allowed);
  // Not a WebSocket upgrade: another protocol, or not a GET, is a switch refused inside TLS.
  for (const auto& r : {upgrade_to("GET", "/echo", "h2c"), upgrade_to("POST", "/echo", "websocket"),
                        upgrade_to("GET", "/echo", "websocket, h2c")}) {
    auto j = proxy::judge_request(r, served, 0, plain_host);
    CHECK(j.verdict == verdict::deny);
    CHECK(j.reason == reason::protocol_not_allowed);
    CHECK_FALSE(j.websocket);
  }
  // Relayed as bytes (the request gate): never followed.
  plain_host.clear();
  auto gate = proxy::judge_request(upgrade_to("GET", "/echo", "websocket"), relayed, 0, plain_host);
  CHECK(gate.verdict == verdict::deny);
  CHECK(gate.reason == reason::protocol_not_allowed);
  CHECK(gate.note == "upgrade:websocket");
}
