#include "daemon/control_api.hpp"
#include "daemon/session_registry.hpp"
#include "policy/domain_name.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <thread>

using namespace airlock;

namespace {

struct collect final : record::decision_sink {
  std::vector<record::decision_record> lines;
  void emit(const record::decision_record& r) noexcept override { lines.push_back(r); }
};

constexpr std::string_view config_text = R"(version: 1
policies:
  npm:
    allow:
      - host: registry.npmjs.org
    deny:
      - host: evil.example
sessions:
  - id: lab
    source: 203.0.113.0/24
    policy: npm
)";

struct fixture {
  std::unique_ptr<policy::store> store;
  collect log;
  daemon::metrics stats;
  std::unique_ptr<daemon::session_registry> registry;

  fixture() {
    store = std::make_unique<policy::store>(*policy::snapshot::compile(policy::config{}));
    registry = std::make_unique<daemon::session_registry>(*store, log, stats);
    auto cfg = policy::load_config_text(config_text, "airlock.yaml");
    REQUIRE(cfg.has_value());
    REQUIRE(registry->apply(*cfg).has_value());
  }

  policy::decision decide(std::string_view source, std::string_view host, std::uint16_t port) {
    const auto snap = store->current();
    const auto registered = store->registered();
    auto s = snap->session_for(boost::asio::ip::make_address(source), registered.get());
    if (!s) return {};
    return s->policy->decide(*policy::domain_name::parse(host), port);
  }
};

control::session_request request(std::string id, std::vector<std::string> sources) {
  control::session_request r;
  r.id = std::move(id);
  r.sources = std::move(sources);
  r.policy = "npm";
  return r;
}

}  // namespace

TEST_CASE("configured sessions open when the configuration is applied") {
  fixture f;
  REQUIRE(f.log.lines.size() == 1);
  CHECK(f.log.lines[0].event == record::event_kind::session);
  CHECK(f.log.lines[0].action == "open");
  CHECK(f.log.lines[0].session == "lab");
  CHECK(f.log.lines[0].mode == "enforce");
}

TEST_CASE("a runtime session with extra allowances gets its own policy, and loses it on removal") {
  fixture f;
  auto r = request("sbx-1", {"198.18.0.2/32"});
  r.allow = {"example.com:8443", "*.pkg.test"};
  r.labels = {{"repo", "acme/web"}};
  auto id = f.registry->add(r);
  REQUIRE(id.has_value());
  CHECK(*id == "sbx-1");
  CHECK(f.decide("198.18.0.2", "example.com", 8443).allowed());
  CHECK(f.decide("198.18.0.2", "a.b.pkg.test", 443).allowed());
  CHECK_FALSE(f.decide("198.18.0.2", "example.com", 443).allowed());   // the port was named
  CHECK(f.decide("198.18.0.2", "registry.npmjs.org", 443).allowed());  // the base policy still applies
  CHECK_FALSE(f.decide("198.18.0.3", "example.com", 8443).allowed());  // another source has no such allowance
  CHECK(f.decide("198.18.0.2", "example.com", 8443).rule == "session sbx-1 allow:1");

  // Every decision for the session is counted and stamped with its labels and tool call.
  REQUIRE(f.registry->set_context("sbx-1", "call-7", {}).has_value());
  record::decision_record d;
  d.event = record::event_kind::connect;
  d.session = "sbx-1";
  d.verdict = policy::verdict::deny;
  d.bytes_up = 5;
  f.registry->emit(d);
  d.verdict = policy::verdict::allow;
  d.bytes_down = 7;
  f.registry->emit(d);
  d.event = record::event_kind::close;  // an allowed connection's end: its bytes, not another connection
  d.bytes_up = 3;
  d.bytes_down.reset();
  f.registry->emit(d);
  d.event = record::event_kind::dns;
  d.bytes_up.reset();
  f.registry->emit(d);
  CHECK(f.log.lines.back().labels == record::label_list{{"repo", "acme/web"}});
  CHECK(f.log.lines.back().tool_call == "call-7");

  auto totals = f.registry->remove("sbx-1");
  REQUIRE(totals.has_value());
  CHECK(totals->connections_denied == 1);
  CHECK(totals->connections_allowed == 1);
  CHECK(totals->dns_queries == 1);
  CHECK(totals->bytes_up == 13);
  CHECK(totals->bytes_down == 7);
  const auto& close = f.log.lines.back();
  CHECK(close.action == "close");
  CHECK(close.connections_allowed == 1);
  CHECK_FALSE(f.decide("198.18.0.2", "example.com", 8443).allowed());
  CHECK_FALSE(f.store->current()->find_policy("session:sbx-1"));
}

namespace {

// A sink every thread may emit to: counts what it is given.
struct counting final : record::decision_sink {
  std::atomic<std::uint64_t> lines{0};
  std::atomic<std::uint64_t> labelled{0};  // decisions stamped with sbx-1's labels
  std::atomic<std::uint64_t> called{0};    // ... and its tool call
  void emit(const record::decision_record& r) noexcept override {
    ++lines;
    if (r.event == record::event_kind::session || r.labels != record::label_list{{"repo", "acme/web"}}) return;
    ++labelled;
    if (r.tool_call == "call-1") ++called;
  }
};

// The configuration above and a runtime session "sbx-1" (labels repo=acme/web), logged to a
// counting sink: for tests that emit from several threads.
struct threaded_fixture {
  counting log;
  daemon::metrics stats;
  policy::store store{*policy::snapshot::compile(policy::config{})};
  daemon::session_registry registry{store, log, stats};

  threaded_fixture() {
    auto cfg = policy::load_config_text(config_text, "airlock.yaml");
    REQUIRE(registry.apply(*cfg).has_value());
    auto r = request("sbx-1", {"198.18.0.2/32"});
    r.labels = {{"repo", "acme/web"}};
    r.netns = "/run/netns/sbx-1";
    REQUIRE(registry.add(r).has_value());
  }
};

}  // namespace

TEST_CASE("lines from several loops at once are all counted and stamped") {
  // The data path emits from every event loop; the registry takes no lock for it.
  threaded_fixture f;
  auto& log = f.log;
  auto& registry = f.registry;
  REQUIRE(registry.set_context("sbx-1", "call-1", {}).has_value());
  CHECK(registry.netns_of("sbx-1") == "/run/netns/sbx-1");
  CHECK(registry.netns_of("nobody").empty());
  const auto before = log.lines.load();

  constexpr int threads = 4, each = 5000;
  std::vector<std::thread> loops;
  for (int t = 0; t < threads; ++t)
    loops.emplace_back([&registry, t] {
      record::decision_record d;
      d.session = "sbx-1";
      d.policy = "npm";
      for (int i = 0; i < each; ++i) {
        d.event = i % 2 ? record::event_kind::dns : record::event_kind::connect;
        d.proto = d.event == record::event_kind::dns ? "dns" : "tls";
        d.verdict = (i + t) % 4 == 0 ? policy::verdict::deny : policy::verdict::allow;
        d.bytes_up = 3;
        d.bytes_down = 2;
        registry.emit(d);
      }
    });
  for (auto& l : loops) l.join();
  CHECK(log.lines - before == threads * each);
  CHECK(log.labelled == threads * each);
  CHECK(log.called == threads * each);
  const auto view = registry.find("sbx-1");
  REQUIRE(view.has_value());
  const auto& t = view->totals;
  CHECK(t.dns_queries == threads * each / 2);
  CHECK(t.connections_allowed + t.connections_denied == threads * each / 2);
  CHECK(t.bytes_up == 3u * threads * each / 2);
  CHECK(t.bytes_down == 2u * threads * each / 2);
  // The metrics saw every line too, each label set once.
  const auto text = f.stats.render({});
  std::uint64_t counted = 0;
  for (std::size_t at = 0; (at = text.find("airlock_decisions_total{", at)) != std::string::npos; ++at) {
    const auto end = text.find('\n', at);
    counted += std::stoull(text.substr(text.rfind(' ', end) + 1, end - text.rfind(' ', end) - 1));
  }
  CHECK(counted == threads * each);
}

TEST_CASE("a session removed while loops emit its lines: its totals count every line stamped as its") {
  threaded_fixture f;
  auto& log = f.log;
  auto& registry = f.registry;
  std::atomic<bool> stop{false};
  std::vector<std::thread> loops;
  for (int t = 0; t < 3; ++t)
    loops.emplace_back([&] {
      record::decision_record d;
      d.event = record::event_kind::connect;
      d.session = "sbx-1";
      d.verdict = policy::verdict::allow;
      while (!stop.load()) registry.emit(d);
    });
  while (log.labelled.load() < 10000) std::this_thread::yield();
  const auto totals = registry.remove("sbx-1");
  stop = true;
  for (auto& l : loops) l.join();
  REQUIRE(totals.has_value());
  // A line stamped with the session's labels was counted in its totals, and the close line
  // was written after the last such line: nothing stamped is missing from it.
  CHECK(totals->connections_allowed == log.labelled.load());
}

TEST_CASE("sessions still open close with their totals when the registry goes") {
  collect log;
  daemon::metrics stats;
  policy::store store(*policy::snapshot::compile(policy::config{}));
  {
    daemon::session_registry registry(store, log, stats);
    auto cfg = policy::load_config_text(config_text, "airlock.yaml");
    REQUIRE(registry.apply(*cfg).has_value());
    record::decision_record d;
    d.event = record::event_kind::connect;
    d.session = "lab";
    d.verdict = policy::verdict::allow;
    registry.emit(d);  // as a connection cut at shutdown, after its loop stopped
  }
  REQUIRE_FALSE(log.lines.empty());
  const auto& close = log.lines.back();
  CHECK(close.event == record::event_kind::session);
  CHECK(close.action == "close");
  CHECK(close.session == "lab");
  CHECK(close.connections_allowed == 1);
}

TEST_CASE("registration refuses what would be ambiguous or wrong, and says why") {
  fixture f;
  REQUIRE(f.registry->add(request("a", {"198.18.0.0/30"})).has_value());
  auto overlap = f.registry->add(request("b", {"198.18.0.2/32"}));
  REQUIRE_FALSE(overlap.has_value());
  CHECK(overlap.error().status == 409);
  CHECK(f.registry->add(request("a", {"198.18.1.0/30"})).error().status == 409);
  CHECK(f.registry->add(request("lab", {"198.18.1.0/30"})).error().status == 409);  // a configured id
  CHECK(f.registry->add(request("bad id!", {"198.18.1.0/30"})).error().status == 400);
  CHECK(f.registry->add(request("c", {"198.18.1.1/30"})).error().status == 400);  // host bits set
  auto unknown = request("d", {"198.18.2.0/30"});
  unknown.policy = "nope";
  CHECK(f.registry->add(unknown).error().status == 404);
  auto bad_allow = request("e", {"198.18.3.0/30"});
  bad_allow.allow = {"exa*mple.com", "x.test:0"};
  auto refused = f.registry->add(bad_allow);
  REQUIRE_FALSE(refused.has_value());
  CHECK(refused.error().messages.size() == 2);
  CHECK(f.registry->remove("lab").error().status == 404);  // configured sessions stay
  CHECK(f.registry->remove("zzz").error().status == 404);
}

TEST_CASE("a reload keeps runtime sessions and their derived policies") {
  fixture f;
  auto r = request("sbx", {"198.18.0.2/32"});
  r.allow = {"example.com"};
  REQUIRE(f.registry->add(r).has_value());
  auto cfg = policy::load_config_text(config_text, "airlock.yaml");
  REQUIRE(f.registry->apply(*cfg).has_value());
  CHECK(f.decide("198.18.0.2", "example.com", 443).allowed());
  // A file with a policy missing closes nothing at run time, and fails closed.
  auto other = policy::load_config_text("version: 1\npolicies:\n  other: {}\n", "airlock.yaml");
  REQUIRE(other.has_value());
  REQUIRE(f.registry->apply(*other).has_value());
  CHECK_FALSE(f.decide("198.18.0.2", "registry.npmjs.org", 443).allowed());
  CHECK(f.log.lines.back().action == "close");  // the configured session "lab" is gone
  CHECK(f.log.lines.back().session == "lab");
}

TEST_CASE("session requests are parsed strictly") {
  auto ok = daemon::parse_session_request(
      R"({"id":"x","sources":["198.18.0.2/32"],"policy":"npm","allow":["a.test"],"labels":{"k":"v"},"netns":"/run/netns/x"})");
  REQUIRE(ok.has_value());
  CHECK(ok->labels == record::label_list{{"k", "v"}});
  CHECK(ok->netns == "/run/netns/x");
  CHECK(daemon::parse_session_request("{").error().find("not JSON") != std::string::npos);
  CHECK(daemon::parse_session_request(R"({"sources":"x"})").error() == "sources: expected an array of strings");
  CHECK(daemon::parse_session_request(R"({"labels":{"k":1}})").error() == "labels.k: expected a string");
  CHECK(daemon::parse_session_request(R"({"polcy":"x"})").error().find("unknown field 'polcy'") != std::string::npos);
}

TEST_CASE("grants: given with a line, ended with their tool call or session, each end with its line") {
  collect log;
  daemon::metrics stats;
  policy::store store(*policy::snapshot::compile(policy::config{}));
  policy::session_grants grants({4, 16});
  daemon::session_registry registry(store, log, stats, &grants);
  auto cfg = policy::load_config_text(config_text, "airlock.yaml");
  REQUIRE(cfg.has_value());
  REQUIRE(registry.apply(*cfg).has_value());
  REQUIRE(registry.add(request("sbx-1", {"198.18.0.2/32"})).has_value());
  const auto name = *policy::domain_name::parse("files.example.org");
  const auto now = policy::session_grants::clock::now();

  daemon::grant_request g;
  g.allow = "files.example.org";
  g.tool_call = true;
  auto refused = registry.add_grant("sbx-1", g);  // no tool call yet
  REQUIRE_FALSE(refused.has_value());
  CHECK(refused.error().status == 409);
  CHECK(registry.add_grant("nobody", g).error().status == 404);
  daemon::grant_request no_scope;
  no_scope.allow = "files.example.org";
  CHECK(registry.add_grant("sbx-1", no_scope).error().status == 400);
  daemon::grant_request address;
  address.allow = "198.51.100.7:443";
  address.session = true;
  CHECK(registry.add_grant("sbx-1", address).error().messages.front().find("is an address") != std::string::npos);

  REQUIRE(registry.set_context("sbx-1", "call-1", {}).has_value());
  auto added = registry.add_grant("sbx-1", g);
  REQUIRE(added.has_value());
  CHECK(added->tool_call == "call-1");
  CHECK(log.lines.back().event == record::event_kind::grant);
  CHECK(log.lines.back().action == "add");
  CHECK(log.lines.back().rule == "grant:" + added->id);
  CHECK(log.lines.back().tool_call == "call-1");
  CHECK(log.lines.back().notes == std::vector<std::string>{"until_tool_call_ends"});
  auto conn = grants.take("sbx-1", name, 443, policy::wire::tls, now);
  REQUIRE(conn);

  // The next tool call ends it: its line says why, how many it let through and cut, and
  // is stamped with the tool call it belonged to.
  REQUIRE(registry.set_context("sbx-1", "call-2", {}).has_value());
  CHECK(conn->cut->pulled());
  CHECK(log.lines.back().action == "end");
  CHECK(log.lines.back().tool_call == "call-1");
  CHECK(log.lines.back().notes == std::vector<std::string>{"ended:tool_call_ended", "connections:1", "cut:1"});
  CHECK(registry.grants_of("sbx-1")->empty());

  // A grant for the session's life ends with it, before its close line.
  daemon::grant_request whole;
  whole.allow = "*.example.org:8443";
  whole.session = true;
  REQUIRE(registry.add_grant("sbx-1", whole).has_value());
  CHECK(log.lines.back().notes == std::vector<std::string>{"until_session_ends"});
  CHECK(registry.grants_of("sbx-1")->size() == 1);
  REQUIRE(registry.remove("sbx-1").has_value());
  const auto end = std::find_if(log.lines.begin(), log.lines.end(), [](const auto& l) {
    return l.event == record::event_kind::grant && l.action == "end" && l.name == "*.example.org:8443";
  });
  REQUIRE(end != log.lines.end());
  CHECK(end->notes.front() == "ended:session_closed");
  CHECK(log.lines.back().event == record::event_kind::session);
  CHECK(grants.size() == 0);
}

TEST_CASE("grant requests are parsed strictly") {
  auto ok = daemon::parse_grant_request(
      R"({"allow":"a.example:22","for":"10m","connections":3,"cut":false,"by":"me"})");
  REQUIRE(ok.has_value());
  CHECK(ok->allow == "a.example:22");
  CHECK(ok->lasts == std::chrono::minutes(10));
  CHECK(ok->connections == 3u);
  CHECK_FALSE(ok->cut);
  CHECK(ok->by == "me");
  CHECK(daemon::parse_grant_request(R"({"allow":"a.example","for":90})")->lasts == std::chrono::seconds(90));
  CHECK(daemon::parse_grant_request(R"({"allow":"a.example","session":true})")->session);
  CHECK(daemon::parse_grant_request(R"({"allow":"a.example","until":"x"})").error().find("unknown field 'until'") !=
        std::string::npos);
  CHECK(daemon::parse_grant_request(R"({"for":"1m"})").error().starts_with("allow:"));
  CHECK(daemon::parse_grant_request(R"({"allow":"a","connections":0})").error().starts_with("connections:"));
  CHECK(daemon::parse_grant_request(R"({"allow":"a","for":-1})").error().starts_with("for:"));
  CHECK(daemon::parse_grant_request(R"({"allow":"a","tool_call":"yes"})").error().starts_with("tool_call:"));
  CHECK(daemon::parse_grant_request("[]").error().starts_with("body:"));
}
