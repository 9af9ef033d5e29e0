#include "record/approval_desk.hpp"

#include "unit/loop_thread.hpp"
#include "unit/spawn.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/json/parse.hpp>
#include <doctest/doctest.h>

#include <atomic>
#include <mutex>
#include <thread>

using namespace airlock;
using namespace airlock::record;
using namespace std::chrono_literals;

namespace {

approval_desk::question asking(const char* session, const char* name, std::uint16_t port,
                               approval_desk::clock::duration wait = 5s) {
  return {session, name, port, R"({"event":"connect","verdict":"deny"})", wait};
}

// What one hold came to: its outcome, or why it was not held.
// Written on the hold's loop, read by the test's thread once `done`: the mutex is what
// orders the two (for ThreadSanitizer too).
struct result_box {
  using result = boost::system::result<approval_desk::outcome, approval_desk::skip>;
  std::mutex m;
  std::optional<result> value;
  std::atomic<bool> done{false};
  const std::optional<result>& r() {
    std::lock_guard lock(m);
    return value;
  }
};

boost::asio::awaitable<void> hold_into(approval_desk& desk, approval_desk::question q, result_box& box) {
  auto got = co_await desk.hold(std::move(q));
  {
    std::lock_guard lock(box.m);
    box.value = std::move(got);
  }
  box.done = true;
}

std::vector<boost::json::object> lines_of(line_queue& q) {
  std::uint64_t dropped = 0;
  const auto text = q.take(dropped);
  std::vector<boost::json::object> out;
  std::size_t start = 0;
  for (auto nl = text.find('\n'); nl != std::string::npos; nl = text.find('\n', start)) {
    out.push_back(boost::json::parse(text.substr(start, nl - start)).as_object());
    start = nl + 1;
  }
  return out;
}

}  // namespace

TEST_CASE("answers: allow-once, allow-session and deny, by their names") {
  for (auto a : {approval_answer::allow_once, approval_answer::allow_session, approval_answer::deny})
    CHECK(parse_approval_answer(to_string(a)) == a);
  CHECK_FALSE(parse_approval_answer("allow"));
  CHECK_FALSE(parse_approval_answer(""));
}

TEST_CASE("nobody watching the session: nothing is held") {
  approval_desk desk;
  boost::asio::io_context io;
  result_box box;
  auto other = desk.watch("someone-else", [] {});
  test::spawn(io, hold_into(desk, asking("s", "a.example", 443), box));
  io.run();
  REQUIRE(box.r());
  REQUIRE_FALSE(box.r()->has_value());
  CHECK(box.r()->error() == approval_desk::skip::no_approver);
  CHECK(desk.holds() == 0);
}

TEST_CASE("an answer from another thread reaches the hold on its loop; the watcher sees question and end") {
  approval_desk desk;
  std::atomic<int> wakes{0};
  auto watcher = desk.watch("", [&] { ++wakes; });
  test::loop_thread loop;
  result_box box;
  loop.run_here([&] { test::spawn(loop.io, hold_into(desk, asking("s", "a.example", 443), box)); });
  REQUIRE(test::eventually([&] { return desk.holds() == 1; }));
  CHECK(wakes >= 1);
  auto asked = lines_of(*watcher);
  REQUIRE(asked.size() == 1);
  CHECK(asked[0].at("event") == "approval");
  CHECK(asked[0].at("id") == "a1");
  CHECK(asked[0].at("name") == "a.example");
  CHECK(asked[0].at("port") == 443);
  CHECK(asked[0].at("decision").as_object().at("verdict") == "deny");

  auto c = desk.claim("a1", approval_desk::clock::now());
  REQUIRE(c.has_value());
  CHECK(c->session == "s");
  CHECK(desk.claim("a1", approval_desk::clock::now()).error() == approval_desk::claim_error::answered);
  CHECK(desk.give("a1", {approval_answer::allow_once, "alice", "grant:g1"}) == 1);
  REQUIRE(test::eventually([&] { return box.done.load(); }));
  REQUIRE(box.r()->has_value());
  const auto& o = (**box.r());
  CHECK(o.id == "a1");
  REQUIRE(o.answered);
  CHECK(o.answered->what == approval_answer::allow_once);
  CHECK(o.answered->by == "alice");
  CHECK(o.answered->grant == "grant:g1");
  CHECK(o.held < 5s);
  REQUIRE(test::eventually([&] { return desk.holds() == 0; }));
  auto end = lines_of(*watcher);
  REQUIRE(end.size() == 1);
  CHECK(end[0].at("event") == "approval_end");
  CHECK(end[0].at("outcome") == "allow-once");
  CHECK(end[0].at("by") == "alice");
  // Asked again later: it was answered.
  CHECK(desk.claim("a1", approval_desk::clock::now()).error() == approval_desk::claim_error::answered);
  loop.stop();
}

TEST_CASE("without an answer the hold ends at the wait, and the question is said expired") {
  approval_desk desk;
  auto watcher = desk.watch("s", [] {});
  boost::asio::io_context io;
  result_box box;
  test::spawn(io, hold_into(desk, asking("s", "a.example", 443, 50ms), box));
  io.run();
  REQUIRE(box.r()->has_value());
  CHECK_FALSE((**box.r()).answered);
  CHECK((**box.r()).held >= 50ms);
  CHECK(desk.holds() == 0);
  CHECK(desk.questions() == 0);
  auto lines = lines_of(*watcher);
  REQUIRE(lines.size() == 2);
  CHECK(lines[1].at("outcome") == "expired");
  CHECK(desk.claim("a1", approval_desk::clock::now()).error() == approval_desk::claim_error::expired);
  CHECK(desk.claim("a9", approval_desk::clock::now()).error() == approval_desk::claim_error::unknown);
}

TEST_CASE("a retry joins the open question: one question, every hold answered") {
  approval_desk desk;
  auto watcher = desk.watch("", [] {});
  test::loop_thread loop;
  result_box first, retry, other_port;
  loop.run_here([&] {
    test::spawn(loop.io, hold_into(desk, asking("s", "a.example", 0), first));
    test::spawn(loop.io, hold_into(desk, asking("s", "a.example", 0), retry));
    test::spawn(loop.io, hold_into(desk, asking("s", "a.example", 22, 100ms), other_port));
  });
  REQUIRE(test::eventually([&] { return desk.holds() == 3; }));
  CHECK(desk.questions() == 2);
  REQUIRE(desk.claim("a1", approval_desk::clock::now()).has_value());
  CHECK(desk.give("a1", {approval_answer::deny, "bob", {}}) == 2);
  REQUIRE(test::eventually([&] { return first.done && retry.done && other_port.done; }));
  CHECK((**first.r()).answered->what == approval_answer::deny);
  CHECK((**retry.r()).answered->by == "bob");
  CHECK((**retry.r()).id == "a1");
  CHECK_FALSE((**other_port.r()).answered);  // its own question, never answered
  loop.stop();
}

TEST_CASE("holds are capped per session and in all; beyond, nothing is held") {
  approval_desk desk({2, 3});
  auto watcher = desk.watch("", [] {});
  boost::asio::io_context io;
  result_box a1, a2, a3, b1, b2;
  const char* names[] = {"1.example", "2.example", "3.example"};
  test::spawn(io, hold_into(desk, asking("a", names[0], 443, 100ms), a1));
  test::spawn(io, hold_into(desk, asking("a", names[1], 443, 100ms), a2));
  test::spawn(io, hold_into(desk, asking("a", names[2], 443, 100ms), a3));
  test::spawn(io, hold_into(desk, asking("b", names[0], 443, 100ms), b1));
  test::spawn(io, hold_into(desk, asking("b", names[1], 443, 100ms), b2));
  io.run();
  CHECK(a1.r()->has_value());
  CHECK(a2.r()->has_value());
  CHECK(a3.r()->error() == approval_desk::skip::session_holds);
  CHECK(b1.r()->has_value());
  CHECK(b2.r()->error() == approval_desk::skip::holds);
  CHECK(desk.holds() == 0);
}

TEST_CASE("a session's end answers its questions deny; a claim nobody answers leaves the holds waiting") {
  approval_desk desk;
  auto watcher = desk.watch("", [] {});
  boost::asio::io_context io;
  result_box gone, kept;
  test::spawn(io, hold_into(desk, asking("s", "a.example", 443), gone));
  test::spawn(io, hold_into(desk, asking("t", "a.example", 443, 100ms), kept));
  io.poll();
  REQUIRE(desk.holds() == 2);
  REQUIRE(desk.claim("a2", approval_desk::clock::now()).has_value());
  desk.unclaim("a2");
  desk.forget("s");
  io.run();
  CHECK((**gone.r()).answered->by == "session_closed");
  CHECK((**gone.r()).answered->what == approval_answer::deny);
  CHECK_FALSE((**kept.r()).answered);
}

TEST_CASE("a watcher that comes later is shown the questions still open, with their time left") {
  approval_desk desk;
  auto first = desk.watch("", [] {});
  test::loop_thread loop;
  result_box box;
  loop.run_here([&] { test::spawn(loop.io, hold_into(desk, asking("s", "a.example", 443, 2s), box)); });
  REQUIRE(test::eventually([&] { return desk.holds() == 1; }));
  auto later = desk.watch("s", [] {});
  auto lines = lines_of(*later);
  REQUIRE(lines.size() == 1);
  CHECK(lines[0].at("expires_in_ms").as_int64() <= 2000);
  CHECK(desk.approvers() == 2);
  first.reset();
  CHECK(desk.approvers() == 1);
  desk.forget("s");
  REQUIRE(test::eventually([&] { return box.done.load(); }));
  loop.stop();
}

TEST_CASE("answers and holds from several threads at once: every hold ends, counted once") {
  approval_desk desk({0, 10'000});
  auto watcher = desk.watch("", [] {});
  test::loop_thread a, b;
  constexpr int n = 200;
  std::vector<result_box> boxes(n);
  for (int i = 0; i < n; ++i) {
    auto& loop = i % 2 ? a : b;
    const std::string name = "h" + std::to_string(i % 50) + ".example";
    boost::asio::post(loop.io, [&desk, &loop, &boxes, i, name] {
      test::spawn(loop.io, hold_into(desk, {"s", name, 443, "{}", 300ms}, boxes[static_cast<std::size_t>(i)]));
    });
  }
  std::thread answerer([&] {
    for (int round = 0; round < 200; ++round) {
      for (int q = 1; q <= 60; ++q) {
        const auto id = "a" + std::to_string(q);
        if (desk.claim(id, approval_desk::clock::now()).has_value())
          desk.give(id, {q % 2 ? approval_answer::allow_once : approval_answer::deny, "t", {}});
      }
      std::this_thread::sleep_for(1ms);
    }
  });
  answerer.join();
  REQUIRE(test::eventually(
      [&] { return std::all_of(boxes.begin(), boxes.end(), [](const result_box& x) { return x.done.load(); }); }));
  REQUIRE(test::eventually([&] { return desk.holds() == 0; }));
  CHECK(desk.questions() == 0);
  a.stop();
  b.stop();
}
