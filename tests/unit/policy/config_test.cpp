#include "base/small_file.hpp"
#include "policy/config.hpp"
#include "policy/snapshot.hpp"

#include <doctest/doctest.h>

#include <chrono>

#include <cstdlib>
#include <filesystem>

namespace fs = std::filesystem;
using namespace airlock::policy;

namespace {

fs::path data_dir() {
  const char* d = std::getenv("AIRLOCK_TEST_DATA");
  REQUIRE_MESSAGE(d != nullptr, "AIRLOCK_TEST_DATA must point at tests/data (ctest sets it)");
  return fs::path(d) / "policy";
}

std::string read(const fs::path& p) {
  auto text = airlock::base::read_file(p);
  REQUIRE(text.has_value());
  return std::move(*text);
}

std::string joined(const std::vector<config_error>& errors) {
  std::string out;
  for (const auto& e : errors) out += e.to_string() + "\n";
  return out;
}

}  // namespace

TEST_CASE("every bad policy file gives exactly its expected messages") {
  int checked = 0;
  for (const auto& entry : fs::directory_iterator(data_dir() / "bad")) {
    if (entry.path().extension() != ".yaml") continue;
    const auto name = entry.path().filename().string();
    CAPTURE(name);
    auto expected = entry.path();
    expected.replace_extension(".expected");
    REQUIRE_MESSAGE(fs::exists(expected), "each bad file needs its .expected messages");
    auto r = load_config_text(read(entry.path()), name);
    REQUIRE_FALSE(r.has_value());
    CHECK(joined(r.error()) == read(expected));
    ++checked;
  }
  CHECK(checked >= 12);
}

TEST_CASE("every good policy file loads") {
  int checked = 0;
  for (const auto& entry : fs::directory_iterator(data_dir() / "ok")) {
    CAPTURE(entry.path().string());
    auto r = load_config_file(entry.path());
    CHECK_MESSAGE(r.has_value(), (r.has_value() ? std::string() : joined(r.error())));
    ++checked;
  }
  CHECK(checked >= 1);
}

TEST_CASE("the embedded default policy loads and denies by default") {
  auto cfg = load_default_config();
  REQUIRE_MESSAGE(cfg.has_value(), (cfg.has_value() ? std::string() : joined(cfg.error())));
  CHECK(cfg->file == default_config_label);
  auto snap = *snapshot::compile(*cfg);
  auto s = snap->session_for(boost::asio::ip::make_address("198.51.100.2"));
  REQUIRE(s);
  auto name = [](const char* n) { return *domain_name::parse(n); };
  CHECK(s->policy->decide(name("registry.npmjs.org"), 443).verdict == verdict::allow);
  CHECK(s->policy->decide(name("github.com"), 22).verdict == verdict::allow);
  CHECK(s->policy->decide(name("gist.github.com"), 443).reason == reason::host_denied);
  CHECK(s->policy->decide(name("attacker.example"), 443).reason == reason::host_not_allowed);
  CHECK(s->policy->decide(name("registry.npmjs.org"), 8080).reason == reason::port_not_allowed);
}

TEST_CASE("a missing file says so with its path") {
  auto r = load_config_file("/nonexistent/airlock.yaml");
  REQUIRE_FALSE(r.has_value());
  CHECK(r.error().front().to_string() ==
        "/nonexistent/airlock.yaml: cannot open the file (does it exist and is it readable?)");
}

TEST_CASE("all errors of a file are reported, not just the first") {
  auto r = load_config_text("version: 1\npolicies:\n  p:\n    mode: enforcing\n    allow:\n      - host: a..b\n",
                            "f.yaml");
  REQUIRE_FALSE(r.has_value());
  CHECK(joined(r.error()) == "f.yaml:4:11: policies.p.mode: 'enforcing'; expected 'enforce' or 'audit'\n"
                             "f.yaml:6:15: policies.p.allow[0].host: 'a..b': empty label\n");
}

TEST_CASE("listen, upstream and sessions are read") {
  auto r = load_config_text(R"(version: 1
listen:
  proxy: ["127.0.0.1:15001", "[::1]:15001"]
  dns: 127.0.0.1:15053
upstream_dns: [198.51.100.53, "[2001:db8::53]:5353"]
log:
  decisions: "-"
policies:
  p:
    allow:
      - host: example.com
sessions:
  - source: 198.51.100.0/24
    policy: p
  - id: sandbox-7
    source: 198.51.100.7/32
    policy: p
default_policy: p
)",
                            "f.yaml");
  REQUIRE_MESSAGE(r.has_value(), (r.has_value() ? std::string() : joined(r.error())));
  CHECK(r->listen.proxy.size() == 2);
  CHECK(r->listen.proxy[1].to_string() == "[::1]:15001");
  CHECK(r->listen.dns.at(0).port == 15053);
  CHECK(r->upstream_dns.at(0).to_string() == "198.51.100.53:53");
  CHECK(r->upstream_dns.at(1).to_string() == "[2001:db8::53]:5353");
  CHECK(r->decisions_log == "-");
  CHECK(r->sessions.at(0).id == "198.51.100.0/24");
  CHECK(r->sessions.at(1).id == "sandbox-7");
  CHECK(r->default_policy == "p");
}

TEST_CASE("the limits section: caps, per-session limits that 0 turns off, sizes") {
  auto r = load_config_text("version: 1\nlimits:\n  pending_handshakes: 300\n  session_pending_handshakes: 50\n"
                            "  session_connections: 0\n  session_bytes_up: 64K\n",
                            "f.yaml");
  REQUIRE(r.has_value());
  CHECK(r->limits.pending_handshakes == 300);
  CHECK(r->limits.session_pending_handshakes == 50);
  CHECK(r->limits.session_connections == 0);
  CHECK(r->limits.session_bytes_up == 65536);
  // Each session's share by default: a quarter of each daemon-wide cap.
  CHECK(load_config_text("version: 1\n", "f.yaml")->limits.session_pending_handshakes == 500);
  CHECK(load_config_text("version: 1\n", "f.yaml")->limits.session_connections == 5000);
  auto bad = load_config_text("version: 1\nlimits:\n  session_pending_handshakes: lots\n  pending: 3\n", "f.yaml");
  REQUIRE_FALSE(bad.has_value());
  CHECK(joined(bad.error()).find("f.yaml:3:") != std::string::npos);
  CHECK(joined(bad.error()).find("limits.session_pending_handshakes") != std::string::npos);
  CHECK(joined(bad.error()).find("f.yaml:4:") != std::string::npos);  // an unknown key, named with its line
}

TEST_CASE("the timeouts section: durations with units, defaults, errors with their line") {
  using namespace std::chrono_literals;
  auto d = load_config_text("version: 1\n", "f.yaml");
  REQUIRE(d.has_value());
  CHECK(d->timeouts.peek == 5s);
  CHECK(d->timeouts.connect == 10s);
  CHECK(d->timeouts.idle == 10min);
  auto r = load_config_text("version: 1\ntimeouts:\n  peek: 1500ms\n  connect: 3s\n  idle: 1h30m\n", "f.yaml");
  REQUIRE(r.has_value());
  CHECK(r->timeouts.peek == 1500ms);
  CHECK(r->timeouts.connect == 3s);
  CHECK(r->timeouts.idle == 90min);
  auto bad = load_config_text("version: 1\ntimeouts:\n  peek: soon\n  handshake: 3s\n", "f.yaml");
  REQUIRE_FALSE(bad.has_value());
  CHECK(joined(bad.error()).find("f.yaml:3:9: timeouts.peek: ") != std::string::npos);
  CHECK(joined(bad.error()).find("f.yaml:4:") != std::string::npos);  // an unknown key, named with its line
  CHECK_FALSE(load_config_text("version: 1\ntimeouts: 5s\n", "f.yaml").has_value());
}

TEST_CASE("the overload section: a memory limit with units, a pressure file; off by default") {
  auto d = load_config_text("version: 1\n", "f.yaml");
  REQUIRE(d.has_value());
  CHECK(d->overload.memory_limit == 0);
  CHECK(d->overload.pressure_file.empty());
  auto r = load_config_text("version: 1\noverload:\n  memory_limit: 1.5G\n  pressure_file: /run/p\n", "f.yaml");
  REQUIRE(r.has_value());
  CHECK(r->overload.memory_limit == 1536ull * 1024 * 1024);
  CHECK(r->overload.pressure_file == "/run/p");
  auto bad = load_config_text("version: 1\noverload:\n  memory_limit: plenty\n  max_heap: 1G\n", "f.yaml");
  REQUIRE_FALSE(bad.has_value());
  CHECK(joined(bad.error()).find("f.yaml:3:17: overload.memory_limit: ") != std::string::npos);
  CHECK(joined(bad.error()).find("f.yaml:4:") != std::string::npos);
}

TEST_CASE("log.when_unwritable: refuse by default, pass on request, nothing else") {
  auto d = load_config_text("version: 1\n", "f.yaml");
  REQUIRE(d.has_value());
  CHECK(d->refuse_when_unrecorded);
  auto pass = load_config_text("version: 1\nlog:\n  when_unwritable: pass\n", "f.yaml");
  REQUIRE(pass.has_value());
  CHECK_FALSE(pass->refuse_when_unrecorded);
  auto refuse = load_config_text("version: 1\nlog:\n  when_unwritable: refuse\n", "f.yaml");
  REQUIRE(refuse.has_value());
  CHECK(refuse->refuse_when_unrecorded);
  auto bad = load_config_text("version: 1\nlog:\n  when_unwritable: drop\n", "f.yaml");
  REQUIRE_FALSE(bad.has_value());
  CHECK(joined(bad.error()) == "f.yaml:3:20: log.when_unwritable: 'drop'; expected 'refuse' or 'pass'\n");
}

TEST_CASE("the dns section: deny rcode, refused types by name or number, rate") {
  auto r = load_config_text("version: 1\ndns:\n  deny_with: refused\n  refused_types: [txt, \"NULL\", TYPE99]\n"
                            "  queries_per_second: 5\n  burst: 10\n",
                            "f.yaml");
  REQUIRE(r.has_value());
  CHECK(r->dns.deny_with_refused);
  CHECK(r->dns.refused_types == std::vector<std::uint16_t>{16, 10, 99});
  CHECK(r->dns.queries_per_second == 5);
  CHECK(r->dns.burst == 10);
  auto bad = load_config_text("version: 1\ndns:\n  deny_with: drop\n  refused_types: [TXTX]\n  burst: -1\n", "f.yaml");
  REQUIRE_FALSE(bad.has_value());
  CHECK(joined(bad.error()) ==
        "f.yaml:3:14: dns.deny_with: 'drop'; expected 'nxdomain' or 'refused'\n"
        "f.yaml:4:18: dns.refused_types: unknown type 'TXTX'; use a name such as TXT or NULL, or TYPE<number>\n"
        "f.yaml:5:10: dns.burst: expected a positive number\n");
}

TEST_CASE("the dns section: DNS over TCP caps and idle time, defaults and errors") {
  auto defaults = load_config_text("version: 1\n", "f.yaml");
  REQUIRE(defaults.has_value());
  CHECK(defaults->dns.tcp_connections == 256);
  CHECK(defaults->dns.session_tcp_connections == 16);
  CHECK(defaults->dns.tcp_queries_per_connection == 1000);
  CHECK(defaults->dns.tcp_idle == std::chrono::seconds(10));
  auto r = load_config_text(
      "version: 1\ndns:\n  tcp_connections: 8\n  session_tcp_connections: 0\n  tcp_queries_per_connection: 3\n"
      "  tcp_idle: 500ms\n",
      "f.yaml");
  REQUIRE(r.has_value());
  CHECK(r->dns.tcp_connections == 8);
  CHECK(r->dns.session_tcp_connections == 0);
  CHECK(r->dns.tcp_queries_per_connection == 3);
  CHECK(r->dns.tcp_idle == std::chrono::milliseconds(500));
  auto bad = load_config_text("version: 1\ndns:\n  tcp_connections: 0\n  tcp_idle: 0s\n  tcp_queries: 4\n", "f.yaml");
  REQUIRE_FALSE(bad.has_value());
  const auto text = joined(bad.error());
  CHECK(text.find("f.yaml:3:20: dns.tcp_connections: '0': expected a whole number from 1") != std::string::npos);
  CHECK(text.find("f.yaml:4:13: dns.tcp_idle: '0s': must be at least 1ms") != std::string::npos);
  CHECK(text.find("f.yaml:5:3: unknown key 'tcp_queries' in dns") != std::string::npos);
}
