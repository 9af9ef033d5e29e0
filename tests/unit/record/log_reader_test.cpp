#include "record/log_reader.hpp"

#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>

using namespace airlock::record;

namespace {

struct temp_file {
  std::filesystem::path path = std::filesystem::temp_directory_path() /
                               ("evidence_test_" + std::to_string(::getpid()) + ".jsonl");
  explicit temp_file(const std::string& text) { std::ofstream(path, std::ios::binary) << text; }
  ~temp_file() { std::filesystem::remove(path); }
};

std::string line_of(std::string_view session, std::string_view name) {
  return R"({"ts":"2026-12-02T14:21:16.000000Z","event":"dns","session":")" + std::string(session) + R"(","name":")" +
         std::string(name) + R"("})";
}

}  // namespace

TEST_CASE("session_filter keeps one session's lines and counts what it skips") {
  session_filter f("s1");
  f.feed(R"({"ts":"2026-12-02T14:21:16.000000Z","event":"dns","session":"s1","name":"a.test"})");
  f.feed(R"({"ts":"2026-12-02T14:21:16.000000Z","event":"dns","session":"s10","name":"b.test"})");  // a longer id
  f.feed(R"({"ts":"2026-12-02T14:21:16.000000Z","event":"dns","session":"s2","name":"\"session\":\"s1\""})");
  f.feed("garbage");
  f.feed(R"({"ts":"2026-12-02T14:21:2)");  // a line cut short
  f.feed(R"({"event":"dns","session":"s1",broken})");
  f.feed(R"({"ts":"2026-12-02T14:21:17.000000Z","event":"log_dropped","count":4})");
  f.feed("");
  f.feed(R"({"ts":"2026-12-02T14:21:18.000000Z","event":"connect","session":"s1","name":"a.test"})");
  f.feed(R"({"ts":"2026-12-02T14:21:19.000000Z","event":"log_dropped","count":9})");  // after its last line
  const auto log = std::move(f).finish();
  REQUIRE(log.events.size() == 2);
  CHECK(log.events[0].name == "a.test");
  CHECK(log.events[1].kind == event_kind::connect);
  CHECK(log.lines == 10);
  CHECK(log.unparseable == 3);
  CHECK(log.dropped == 4);
}

TEST_CASE("a session id with quotes is looked for as the writer escapes it") {
  session_filter f("we\"ird");
  f.feed(R"({"event":"dns","session":"we\"ird","name":"a.test"})");
  CHECK(std::move(f).finish().events.size() == 1);
}

TEST_CASE("read_session: lines across block boundaries, CRLF, an over-long line, no final newline") {
  std::string text;
  // Enough other lines that session lines straddle the 1 MiB read blocks.
  const std::string other = line_of("other", std::string(300, 'x') + ".test") + "\n";
  for (int i = 0; i < 8000; ++i) {
    text += other;
    if (i % 1000 == 999) text += line_of("s1", "n" + std::to_string(i) + ".test") + "\r\n";
  }
  text += "{\"event\":\"dns\",\"session\":\"s1\",\"name\":\"" + std::string(std::size_t{3} << 20, 'a') +
          "\"}\n";                     // 3 MiB
  text += line_of("s1", "last.test");  // no newline at the end
  const temp_file f(text);
  const auto r = read_session(f.path.string(), "s1");
  REQUIRE(r.has_value());
  REQUIRE(r->events.size() == 9);
  CHECK(r->events[0].name == "n999.test");
  CHECK(r->events[7].name == "n7999.test");
  CHECK(r->events[8].name == "last.test");
  CHECK(r->lines == 8000 + 8 + 1 + 1);
  CHECK(r->unparseable == 1);
  CHECK(r->path == f.path.string());
}

TEST_CASE("read_session: a missing file is an error naming it") {
  const auto r = read_session("/nonexistent/decisions.jsonl", "s1");
  REQUIRE(!r.has_value());
  CHECK(r.error().find("/nonexistent/decisions.jsonl: cannot open the log: ") == 0);
}

TEST_CASE("read_session: a directory cannot be read") {
  const auto r = read_session(std::filesystem::temp_directory_path().string(), "s1");
  REQUIRE(!r.has_value());
  CHECK(r.error().find(": cannot read the log: ") != std::string::npos);
}
