#include "record/decision_feed.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

using namespace airlock;
using namespace airlock::record;

namespace {

struct collect final : decision_sink {
  std::vector<std::string> sessions;
  void emit(const decision_record& r) noexcept override { sessions.push_back(r.session); }
};

decision_record rec(std::string session, policy::verdict v, event_kind e = event_kind::connect) {
  decision_record r;
  r.session = std::move(session);
  r.verdict = v;
  r.event = e;
  r.name = "x.example";
  return r;
}

std::size_t count_lines(const std::string& s) { return static_cast<std::size_t>(std::count(s.begin(), s.end(), '\n')); }

}  // namespace

TEST_CASE("every record goes on to the log; nobody watching, nothing else happens") {
  collect log;
  decision_feed feed(log);
  feed.emit(rec("a", policy::verdict::allow));
  CHECK(log.sessions == std::vector<std::string>{"a"});
  CHECK(feed.watchers() == 0);
}

TEST_CASE("a subscription gets the lines its filter passes, each the log's own line") {
  collect log;
  decision_feed feed(log);
  auto all = feed.subscribe({}, [] {});
  auto denials_of_b = feed.subscribe(feed_filter{"b", true}, [] {});
  feed.emit(rec("a", policy::verdict::deny));
  feed.emit(rec("b", policy::verdict::allow));
  feed.emit(rec("b", policy::verdict::deny));
  feed.emit(rec("b", policy::verdict::audit_deny));
  feed.emit(rec("b", policy::verdict::deny, event_kind::session));  // an open line: not a decision
  CHECK(log.sessions.size() == 5);

  std::uint64_t dropped = 1;
  const auto every = all->take(dropped);
  CHECK(dropped == 0);
  CHECK(count_lines(every) == 5);
  const auto only = denials_of_b->take(dropped);
  REQUIRE(count_lines(only) == 2);
  CHECK(only.find("\"session\":\"b\"") != std::string::npos);
  CHECK(only.find("\"verdict\":\"deny\"") != std::string::npos);
  CHECK(only.find("\"verdict\":\"audit-deny\"") != std::string::npos);
  CHECK(only.find("\"verdict\":\"allow\"") == std::string::npos);
  CHECK(only.starts_with("{\"ts\":"));  // whole lines, as the log writes them
  CHECK(only.ends_with("}\n"));
}

TEST_CASE("a slow reader loses lines beyond its capacity, and is told how many") {
  collect log;
  decision_feed feed(log);
  auto s = feed.subscribe(
      {}, [] {}, 3);
  for (int i = 0; i < 10; ++i) feed.emit(rec("a", policy::verdict::allow));
  std::uint64_t dropped = 0;
  CHECK(count_lines(s->take(dropped)) == 3);
  CHECK(dropped == 7);
  CHECK(s->take(dropped).empty());
  CHECK(dropped == 0);
  CHECK(log.sessions.size() == 10);  // the log lost nothing
}

TEST_CASE("the wake-up comes once per batch, and only after a take found nothing") {
  collect log;
  decision_feed feed(log);
  int wakes = 0;
  auto s = feed.subscribe({}, [&] { ++wakes; });
  feed.emit(rec("a", policy::verdict::allow));  // armed from the start
  feed.emit(rec("a", policy::verdict::allow));
  CHECK(wakes == 1);
  std::uint64_t dropped = 0;
  CHECK(count_lines(s->take(dropped)) == 2);  // not empty: stays disarmed
  feed.emit(rec("a", policy::verdict::allow));
  CHECK(wakes == 1);
  CHECK(count_lines(s->take(dropped)) == 1);
  CHECK(s->take(dropped).empty());  // empty: armed again
  feed.emit(rec("a", policy::verdict::allow));
  CHECK(wakes == 2);
}

TEST_CASE("a subscription let go of is forgotten: watchers drops back to zero") {
  collect log;
  decision_feed feed(log);
  auto s = feed.subscribe({}, [] {});
  CHECK(feed.watchers() == 1);
  s.reset();
  feed.emit(rec("a", policy::verdict::allow));
  CHECK(feed.watchers() == 0);
}

TEST_CASE("lines from many threads reach a reader on another, none lost under its capacity") {
  struct quiet final : decision_sink {
    std::atomic<int> n{0};
    void emit(const decision_record&) noexcept override { ++n; }
  } log;
  decision_feed feed(log);
  std::atomic<int> wakes{0};
  auto s = feed.subscribe(
      {}, [&] { ++wakes; }, 100000);
  std::vector<std::thread> emitters;
  for (int t = 0; t < 4; ++t)
    emitters.emplace_back([&] {
      for (int i = 0; i < 2000; ++i) feed.emit(rec("a", policy::verdict::allow));
    });
  std::size_t seen = 0;
  std::uint64_t dropped = 0, lost = 0;
  while (seen < 8000) {
    seen += count_lines(s->take(dropped));
    lost += dropped;
    if (lost) break;
  }
  for (auto& t : emitters) t.join();
  CHECK(lost == 0);
  CHECK(seen == 8000);
  CHECK(log.n == 8000);
  CHECK(wakes >= 1);
}
