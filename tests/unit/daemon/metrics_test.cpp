#include "daemon/metrics.hpp"

#include <doctest/doctest.h>

#include <sstream>
#include <string>

using namespace airlock::daemon;
using namespace airlock::record;

namespace {

// The series of airlock_decisions_total in a scrape.
std::size_t decision_series(const std::string& text) {
  std::istringstream in(text);
  std::size_t n = 0;
  for (std::string line; std::getline(in, line);)
    if (line.starts_with("airlock_decisions_total{")) ++n;
  return n;
}

decision_record allowed_tls_connection() {
  decision_record r;
  r.event = event_kind::connect;
  r.verdict = airlock::policy::verdict::allow;
  r.reason = airlock::policy::reason::host_allowed;
  r.proto = "tls";
  r.policy = "default";
  return r;
}

}  // namespace

TEST_CASE("sessions that come and go add no series: a session's own policy counts as 'session'") {
  metrics m;
  auto r = allowed_tls_connection();
  m.count(r);
  // 1,000 sessions registered with --allow, each with a policy of its own.
  for (int i = 0; i < 1000; ++i) {
    r.policy = std::string(metrics::runtime_policy_prefix) + "s-" + std::to_string(i);
    m.count(r);
  }
  const auto text = m.render({});
  CHECK(decision_series(text) == 2);
  CHECK(text.find("policy=\"session\"") != std::string::npos);
  CHECK(text.find("s-999") == std::string::npos);
  CHECK(metrics::policy_label("session:abc") == "session");
  CHECK(metrics::policy_label("closed") == "closed");
}

TEST_CASE("a connection counts once, by its decision; its bytes come with its close line") {
  metrics m;
  auto r = allowed_tls_connection();
  m.count(r);
  r.event = event_kind::close;
  r.bytes_up = 100;
  r.bytes_down = 2000;
  m.count(r);
  auto text = m.render({});
  CHECK(decision_series(text) == 1);  // the close is no decision
  CHECK(text.find("event=\"close\"") == std::string::npos);
  CHECK(text.find("airlock_relayed_bytes_total{direction=\"down\"} 2000") != std::string::npos);
  // A connection a budget cut: its close is a deny, and counted as one.
  r.verdict = airlock::policy::verdict::deny;
  r.reason = airlock::policy::reason::limit_exceeded;
  r.bytes_down = 1;
  m.count(r);
  text = m.render({});
  CHECK(decision_series(text) == 2);
  CHECK(text.find("event=\"close\"") != std::string::npos);
  CHECK(text.find("airlock_relayed_bytes_total{direction=\"down\"} 2001") != std::string::npos);
}
