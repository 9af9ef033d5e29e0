#include "evidence/suggest.hpp"
#include "policy/config.hpp"
#include "policy/snapshot.hpp"
#include "record/log_reader.hpp"
#include "unit/evidence/scripted_log.hpp"

#include <doctest/doctest.h>

using namespace airlock;
using namespace airlock::evidence;
using namespace airlock::record;

namespace {

std::vector<event> events_of(std::string_view session, std::string_view text) {
  session_filter f{std::string(session)};
  while (!text.empty()) {
    const auto nl = text.find('\n');
    f.feed(text.substr(0, nl));
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
  }
  return std::move(f).finish().events;
}

// A connect line of session "s" to NAME at DST, with a verdict and reason.
std::string connect(std::string_view name, std::string_view dst, std::string_view verdict = "audit-deny",
                    std::string_view reason = "host_not_allowed") {
  return R"({"ts":"2026-12-02T10:00:00.000000Z","event":"connect","session":"s","name":)" +
         (name.empty() ? std::string("null") : "\"" + std::string(name) + "\"") + R"(,"dst":")" + std::string(dst) +
         R"(","proto":"tls","verdict":")" + std::string(verdict) + R"(","reason":")" + std::string(reason) +
         R"(","rule":"default","conn":1})" + "\n";
}

// The suggestion as a whole configuration, through the loader and the compiler
// `airlock check` uses; returns the compiled snapshot.
std::shared_ptr<const policy::snapshot> load(const std::string& yaml) {
  auto cfg = policy::load_config_text("version: 1\n" + yaml, "suggested.yaml");
  if (!cfg.has_value()) {
    for (const auto& e : cfg.error()) MESSAGE(e.to_string());
    FAIL("the suggestion does not load:\n" << yaml);
  }
  auto snap = policy::snapshot::compile(*cfg);
  REQUIRE(snap.has_value());
  return *snap;
}

std::string decide(const policy::snapshot& snap, std::string_view host, std::uint16_t port) {
  const auto* p = snap.find_policy("suggested");
  REQUIRE(p);
  auto name = policy::domain_name::parse(host);
  REQUIRE(name.has_value());
  const auto d = p->decide(*name, port);
  return std::string(policy::to_string(d.verdict)) + " " + std::string(policy::to_string(d.reason));
}

bool has(const std::string& text, std::string_view part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("the scripted session: families, an extra port, and what is never suggested") {
  const auto s = suggest(events_of("sbx-7f3a", test::scripted_log));
  const auto yaml = render_yaml(s, "decisions.jsonl");
  INFO(yaml);
  CHECK(s.decisions == 10);
  CHECK(s.allowed == 4);
  CHECK(s.denied == 2);
  CHECK(s.audit_denied == 4);
  CHECK(has(yaml, "# airlock suggest: session sbx-7f3a, from decisions.jsonl\n"));
  CHECK(has(yaml, "policies:\n  suggested:\n"));
  CHECK(has(yaml, "    # github (service family) covers github.com; first seen 2026-12-02T14:21:17.600000Z "
                  "by npm install -> git\n"));
  CHECK(has(yaml, "    # npm (service family) covers registry.npmjs.org; first seen 2026-12-02T14:21:16.120000Z "
                  "by npm install\n"));
  CHECK(has(yaml, "    include: [github, npm]\n"));
  CHECK(has(yaml, "      # first seen 2026-12-02T14:21:21.000000Z by node\n"
                  "      - host: api.acme.example\n"
                  "        ports: [8443]\n"));
  CHECK(has(yaml, "      # first seen 2026-12-02T14:21:19.050000Z by npm install -> sh -> node -> curl\n"
                  "      - host: exfil.attacker.example\n"));
  CHECK(!has(yaml, "host: registry.npmjs.org"));  // the family has it
  CHECK(!has(yaml, "host: intranet.acme.example"));
  CHECK(!has(yaml, "host: use-application-dns.net"));
  CHECK(!has(yaml, "host: dns.google"));
  CHECK(has(yaml, "# not suggested:\n"));
  CHECK(has(yaml, "#   intranet.acme.example (private_address: "));
  CHECK(has(yaml, "#   use-application-dns.net (doh_canary: "));
  CHECK(has(yaml, "#   dns.google (public-resolvers: "));

  const auto snap = load(yaml);
  CHECK(decide(*snap, "registry.npmjs.org", 443) == "allow host_allowed");
  CHECK(decide(*snap, "github.com", 22) == "allow host_allowed");
  CHECK(decide(*snap, "api.acme.example", 8443) == "allow host_allowed");
  CHECK(decide(*snap, "api.acme.example", 443) == "deny port_not_allowed");
  CHECK(decide(*snap, "exfil.attacker.example", 443) == "allow host_allowed");
  CHECK(decide(*snap, "intranet.acme.example", 443) == "deny host_not_allowed");
  CHECK(decide(*snap, "dns.google", 443) == "deny host_denied");
}

TEST_CASE("three names under one suffix become *.suffix, said in a comment") {
  const auto log = connect("img.cdn.acmecorp.example", "203.0.113.1:443") +
                   connect("js.cdn.acmecorp.example", "203.0.113.2:443") +
                   connect("css.cdn.acmecorp.example", "203.0.113.3:443") +
                   connect("api.acmecorp.example", "203.0.113.4:443");
  const auto yaml = render_yaml(suggest(events_of("s", log)), "l");
  INFO(yaml);
  CHECK(has(yaml, "      # collapsed 3 names into *.cdn.acmecorp.example: css.cdn.acmecorp.example, "
                  "img.cdn.acmecorp.example, js.cdn.acmecorp.example\n"));
  CHECK(has(yaml, "      - host: \"*.cdn.acmecorp.example\"\n"));
  CHECK(has(yaml, "      - host: api.acmecorp.example\n"));  // not folded into *.acmecorp.example
  const auto snap = load(yaml);
  CHECK(decide(*snap, "fonts.cdn.acmecorp.example", 443) == "allow host_allowed");
  CHECK(decide(*snap, "cdn.acmecorp.example", 443) == "deny host_not_allowed");
}

TEST_CASE("collapsing is conservative") {
  SUBCASE("two names stay two") {
    const auto yaml = render_yaml(suggest(events_of("s", connect("a.acme.example", "203.0.113.1:443") +
                                                             connect("b.acme.example", "203.0.113.2:443"))),
                                  "l");
    CHECK(!has(yaml, "*."));
  }
  SUBCASE("never under shared hosting, where anyone can have a name") {
    const auto yaml = render_yaml(suggest(events_of("s", connect("a.s3.amazonaws.com", "203.0.113.1:443") +
                                                             connect("b.s3.amazonaws.com", "203.0.113.2:443") +
                                                             connect("c.s3.amazonaws.com", "203.0.113.3:443"))),
                                  "l");
    CHECK(!has(yaml, "*."));
  }
  SUBCASE("never to a public suffix such as co.uk") {
    const auto yaml = render_yaml(
        suggest(events_of("s", connect("a.co.uk", "203.0.113.1:443") + connect("b.co.uk", "203.0.113.2:443") +
                                   connect("c.co.uk", "203.0.113.3:443"))),
        "l");
    CHECK(!has(yaml, "*."));
  }
  SUBCASE("never over a name that was left out") {
    const auto yaml = render_yaml(
        suggest(events_of("s", connect("a.acme.example", "203.0.113.1:443") +
                                   connect("b.acme.example", "203.0.113.2:443") +
                                   connect("c.acme.example", "203.0.113.3:443") +
                                   connect("db.acme.example", "203.0.113.4:443", "deny", "private_address"))),
        "l");
    CHECK(!has(yaml, "*."));
    CHECK(has(yaml, "#   db.acme.example (private_address"));
  }
  SUBCASE("a registrable name under a two-letter country code collapses") {
    const auto yaml = render_yaml(
        suggest(events_of("s", connect("a.shop.co.uk", "203.0.113.1:443") + connect("b.shop.co.uk", "203.0.113.2:443") +
                                   connect("c.shop.co.uk", "203.0.113.3:443"))),
        "l");
    CHECK(has(yaml, "- host: \"*.shop.co.uk\""));
  }
}

TEST_CASE("a family host on a port the family does not give stays an entry for that port") {
  const auto yaml = render_yaml(
      suggest(events_of("s", connect("registry.npmjs.org", "104.16.24.34:443", "allow", "host_allowed") +
                                 connect("registry.npmjs.org", "104.16.24.34:8080", "deny", "port_not_allowed"))),
      "l");
  INFO(yaml);
  CHECK(has(yaml, "include: [npm]\n"));
  CHECK(has(yaml, "      - host: registry.npmjs.org\n        ports: [8080]\n"));
  const auto snap = load(yaml);
  CHECK(decide(*snap, "registry.npmjs.org", 443) == "allow host_allowed");
  CHECK(decide(*snap, "registry.npmjs.org", 8080) == "allow host_allowed");
}

TEST_CASE("connections without a name: named by the session's DNS answer, or left out") {
  const std::string log =
      R"({"ts":"2026-12-02T10:00:00.000000Z","event":"dns","session":"s","name":"git.acme.example","verdict":"audit-deny","reason":"host_not_allowed","rule":"default","qtype":"A","rcode":"NOERROR","answers":["203.0.113.9"]})"
      "\n" +
      connect("", "203.0.113.9:22", "audit-deny", "no_name") +
      connect("", "198.51.100.77:443", "audit-deny", "no_name");
  const auto yaml = render_yaml(suggest(events_of("s", log)), "l");
  INFO(yaml);
  CHECK(has(yaml, "      - host: git.acme.example\n        ports: [22]\n"));
  CHECK(has(yaml, "#   198.51.100.77:443 (no name: "));
  load(yaml);
}

TEST_CASE("reasons a policy cannot fix are not suggested, unless the name was needed anyway") {
  const std::string log =
      R"({"ts":"2026-12-02T10:00:00.000000Z","event":"dns","session":"s","name":"txt.acme.example","verdict":"deny","reason":"dns_type_refused","rule":"default","qtype":"TXT","rcode":"REFUSED","answers":[]})"
      "\n"
      R"({"ts":"2026-12-02T10:00:00.000000Z","event":"dns","session":"s","name":"a.acme.example","verdict":"deny","reason":"dns_type_refused","rule":"default","qtype":"TXT","rcode":"REFUSED","answers":[]})"
      "\n" +
      connect("a.acme.example", "203.0.113.1:443") +
      connect("gist.github.com", "203.0.113.2:443", "deny", "host_denied") +
      connect("bad..name", "203.0.113.3:443", "deny", "invalid_name");
  const auto yaml = render_yaml(suggest(events_of("s", log)), "l");
  INFO(yaml);
  CHECK(has(yaml, "- host: a.acme.example\n"));
  CHECK(has(yaml, "#   txt.acme.example (dns_type_refused: "));
  CHECK(has(yaml, "#   gist.github.com (host_denied: a deny rule (default) denies it"));
  CHECK(has(yaml, "#   bad..name (invalid_name: "));
  load(yaml);
}

TEST_CASE("nothing to suggest still loads") {
  const auto yaml = render_yaml(suggest(events_of("s", connect("dns.google", "8.8.8.8:443", "deny", "host_denied"))),
                                "l");
  INFO(yaml);
  CHECK(has(yaml, "    allow: []\n"));
  const auto snap = load(yaml);
  CHECK(decide(*snap, "dns.google", 443) == "deny host_denied");
}

TEST_CASE("the first line of a name without a process takes the process from a later one") {
  const std::string log =
      R"({"ts":"2026-12-02T10:00:00.000000Z","event":"dns","session":"s","name":"a.acme.example","verdict":"audit-deny","reason":"host_not_allowed","rule":"default","process":null,"qtype":"A","answers":["203.0.113.9"]})"
      "\n"
      R"({"ts":"2026-12-02T10:00:01.000000Z","event":"connect","session":"s","name":"a.acme.example","dst":"203.0.113.9:443","verdict":"audit-deny","reason":"host_not_allowed","rule":"default","process":{"pid":7,"comm":"wget","cmdline":"wget x","chain":[{"pid":7,"comm":"wget","cmdline":"wget x"},{"pid":6,"comm":"bash","cmdline":"bash"}]}})";
  const auto yaml = render_yaml(suggest(events_of("s", log)), "l");
  CHECK(has(yaml, "      # first seen 2026-12-02T10:00:00.000000Z by bash -> wget\n      - host: a.acme.example\n"));
}
