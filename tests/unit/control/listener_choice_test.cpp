#include "control/session_api.hpp"

#include <doctest/doctest.h>

using namespace airlock;
using boost::asio::ip::make_address;

namespace {

control::listener_ports from(std::string_view info) {
  auto r = control::listeners_from_info(info);
  REQUIRE(r.has_value());
  return *r;
}

}  // namespace

TEST_CASE("/v1/info with two proxy ports: the first is the proxy port, the second takes :443") {
  const auto p = from(
      R"({"version":"0.1.0","proxy":[{"address":"0.0.0.0","port":15001},{"address":"0.0.0.0","port":15443}],
      "tproxy":[],"http_proxy":[],"dns":[{"address":"0.0.0.0","port":15053}],"admin":[],
      "decisions_log":"/var/log/airlock/decisions.jsonl","inspection_ca":"/etc/airlock/ca/ca.crt"})");
  CHECK(p.proxy == 15001);
  CHECK(p.https == 15443);
  CHECK(p.dns == 15053);
  CHECK(p.reachable_from_sandbox);
  CHECK(p.decisions_log == "/var/log/airlock/decisions.jsonl");
  CHECK(p.inspection_ca == "/etc/airlock/ca/ca.crt");
}

TEST_CASE("one proxy port (or the same port twice) keeps the single-port rules: no https port") {
  CHECK(from(R"({"proxy":[{"address":"0.0.0.0","port":15001}],"dns":[{"address":"0.0.0.0","port":15053}]})").https ==
        0);
  // IPv4 and IPv6 wildcards on one port are one port.
  const auto p = from(R"({"proxy":[{"address":"0.0.0.0","port":15001},{"address":"::","port":15001}],
      "dns":[{"address":"0.0.0.0","port":15053}]})");
  CHECK(p.proxy == 15001);
  CHECK(p.https == 0);
  CHECK(p.reachable_from_sandbox);
}

TEST_CASE("the https port is one the sandbox can reach, and not the DNS port") {
  // A loopback listener cannot receive a REDIRECTed packet: skipped, also as the proxy port.
  auto p = from(R"({"proxy":[{"address":"127.0.0.1","port":15000},{"address":"0.0.0.0","port":15001},
      {"address":"127.0.0.1","port":15002},{"address":"198.18.0.1","port":15443}],
      "dns":[{"address":"0.0.0.0","port":15053}]})");
  CHECK(p.proxy == 15001);
  CHECK(p.https == 15443);
  p = from(R"({"proxy":[{"address":"0.0.0.0","port":15001},{"address":"127.0.0.1","port":15443}],
      "dns":[{"address":"0.0.0.0","port":15053}]})");
  CHECK(p.https == 0);
  p = from(R"({"proxy":[{"address":"0.0.0.0","port":15001},{"address":"198.18.0.1","port":15053},
      {"address":"0.0.0.0","port":15443}],"dns":[{"address":"0.0.0.0","port":15053}]})");
  CHECK(p.https == 15443);
  // Entries without an address or with an unusable port are not ports at all.
  p = from(R"({"proxy":[{"address":"0.0.0.0","port":15001},{"port":15002},{"address":"0.0.0.0","port":0},
      {"address":"0.0.0.0","port":70000},{"address":"0.0.0.0","port":-3},{"address":"not an address","port":15004},
      "x",{"address":"0.0.0.0","port":15443}],"dns":[{"address":"0.0.0.0","port":15053}]})");
  CHECK(p.proxy == 15001);
  CHECK(p.https == 15443);
}

TEST_CASE("the https port is held on every family the proxy port is (IPv6 listeners are v6-only)") {
  // IPv4 and IPv6 on the proxy port, IPv4 only on the other: IPv6 HTTPS would be refused there.
  auto p = from(R"({"proxy":[{"address":"0.0.0.0","port":15001},{"address":"::","port":15001},
      {"address":"0.0.0.0","port":15443}],"dns":[{"address":"0.0.0.0","port":15053}]})");
  CHECK(p.https == 0);
  p = from(R"({"proxy":[{"address":"0.0.0.0","port":15001},{"address":"::","port":15443}],
      "dns":[{"address":"0.0.0.0","port":15053}]})");
  CHECK(p.https == 0);
  // Both families on both ports; a later port may be the one that covers them.
  p = from(R"({"proxy":[{"address":"0.0.0.0","port":15001},{"address":"::","port":15001},
      {"address":"::","port":15442},{"address":"0.0.0.0","port":15443},{"address":"::","port":15443}],
      "dns":[{"address":"0.0.0.0","port":15053}]})");
  CHECK(p.https == 15443);
}

TEST_CASE("listeners on loopback only: the first ports, not reachable, no https port") {
  const auto p = from(R"({"proxy":[{"address":"127.0.0.1","port":15001},{"address":"127.0.0.1","port":15443}],
      "dns":[{"address":"0.0.0.0","port":15053}]})");
  CHECK(p.proxy == 15001);
  CHECK(p.https == 0);
  CHECK_FALSE(p.reachable_from_sandbox);
  const auto q = from(R"({"proxy":[{"address":"0.0.0.0","port":15001},{"address":"0.0.0.0","port":15443}],
      "dns":[{"address":"127.0.0.1","port":15053}]})");
  CHECK(q.https == 15443);  // the proxy side is fine; reachable_from_sandbox already refuses the daemon
  CHECK_FALSE(q.reachable_from_sandbox);
  const auto none = from(R"({"dns":[{"address":"0.0.0.0","port":15053}]})");
  CHECK(none.proxy == 0);
  CHECK(none.https == 0);
  CHECK_FALSE(none.reachable_from_sandbox);
}

TEST_CASE("an answer that is not a JSON object is an error") {
  CHECK_FALSE(control::listeners_from_info("").has_value());
  CHECK_FALSE(control::listeners_from_info("[1, 2]").has_value());
  CHECK_FALSE(control::listeners_from_info("{\"proxy\":").has_value());
}

TEST_CASE("the embedded daemon's bound endpoints: two kernel-picked ports on the gateway address") {
  const auto gw = make_address("198.18.0.1");
  const auto p = control::choose_listeners({{gw, 40001}, {gw, 40002}}, {{gw, 40003}});
  CHECK(p.proxy == 40001);
  CHECK(p.https == 40002);
  CHECK(p.dns == 40003);
  CHECK(p.reachable_from_sandbox);
  const auto lo = make_address("127.0.0.1");
  const auto q = control::choose_listeners({{lo, 40001}, {lo, 40002}}, {{lo, 40003}});
  CHECK(q.proxy == 40001);
  CHECK(q.https == 0);
  CHECK_FALSE(q.reachable_from_sandbox);
}
