#include "base/json_string.hpp"
#include "record/decision.hpp"
#include "record/decision_log.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

using namespace airlock;

TEST_CASE("a close line has every contract field, null where it does not apply") {
  record::decision_record r;
  r.ts = std::chrono::system_clock::time_point(std::chrono::microseconds(1764676800123456));
  r.event = record::event_kind::close;
  r.session = "s1";
  r.client = "198.51.100.2:40000";
  r.name = "example.com";
  r.dst = "203.0.113.66:443";
  r.upstream = "203.0.113.10:443";
  r.proto = "tls";
  r.verdict = policy::verdict::allow;
  r.reason = policy::reason::dst_mismatch;
  r.rule = "airlock.yaml:14";
  r.conn = 7;
  r.bytes_up = 10;
  r.bytes_down = 20;
  r.duration_ms = 3;
  CHECK(record::render_json_line(r) ==
        "{\"ts\":\"2025-12-02T12:00:00.123456Z\",\"schema\":2,\"event\":\"close\",\"session\":\"s1\",\"labels\":{},"
        "\"tool_call\":null,\"client\":\"198.51.100.2:40000\",\"name\":\"example.com\",\"dst\":\"203.0.113.66:443\","
        "\"upstream\":\"203.0.113.10:443\",\"proto\":\"tls\",\"verdict\":\"allow\",\"reason\":\"dst_mismatch\","
        "\"rule\":\"airlock.yaml:14\",\"conn\":7,\"policy\":null,\"policy_version\":null,\"process\":null,\"bytes_up\":"
        "10,"
        "\"bytes_down\":20,\"duration_ms\":3}\n");
}

TEST_CASE("every line names its schema, second after ts") {
  for (auto kind : {record::event_kind::dns, record::event_kind::connect, record::event_kind::http,
                    record::event_kind::close, record::event_kind::session}) {
    record::decision_record r;
    r.event = kind;
    const auto line = record::render_json_line(r);
    CHECK(line.find("Z\",\"schema\":2,\"event\":\"" + std::string(record::to_string(kind)) + "\"") !=
          std::string::npos);
  }
}

TEST_CASE("hostile bytes in a name cannot break the line or its encoding") {
  record::decision_record r;
  r.name = std::string("a\"b\\c\nd\x01\xff", 9);
  const auto line = record::render_json_line(r);
  CHECK(line.find("\"name\":\"a\\\"b\\\\c\\nd\\u0001\\u00ff\"") != std::string::npos);
  CHECK(line.find('\n') == line.size() - 1);
}

TEST_CASE("dns lines carry qtype, rcode and answers") {
  record::decision_record r;
  r.event = record::event_kind::dns;
  r.qtype = "A";
  r.rcode = "NOERROR";
  r.answers = {"203.0.113.10"};
  const auto line = record::render_json_line(r);
  CHECK(line.find("\"qtype\":\"A\",\"rcode\":\"NOERROR\",\"answers\":[\"203.0.113.10\"]") != std::string::npos);
  CHECK(line.find("bytes_up") == std::string::npos);
}

TEST_CASE("labels, tool call and process are carried as given") {
  record::decision_record r;
  r.labels = {{"repo", "acme/web"}, {"task", "fix \"quotes\""}};
  r.tool_call = "call-7";
  r.process_json = R"({"pid":42,"comm":"curl","cmdline":"curl x","chain":[]})";
  const auto line = record::render_json_line(r);
  CHECK(line.find(R"("labels":{"repo":"acme/web","task":"fix \"quotes\""},"tool_call":"call-7",)") !=
        std::string::npos);
  CHECK(line.find(R"("process":{"pid":42,"comm":"curl","cmdline":"curl x","chain":[]},)") != std::string::npos);
}

TEST_CASE("a session close line carries totals and no decision") {
  record::decision_record r;
  r.ts = std::chrono::system_clock::time_point(std::chrono::microseconds(1764676800123456));
  r.event = record::event_kind::session;
  r.session = "sbx-1";
  r.action = "close";
  r.policy = "npm";
  r.sources = {"198.18.0.2/32"};
  r.dns_queries = 3;
  r.connections_allowed = 2;
  r.connections_denied = 1;
  r.bytes_up = 100;
  r.bytes_down = 2000;
  r.duration_ms = 1500;
  CHECK(
      record::render_json_line(r) ==
      "{\"ts\":\"2025-12-02T12:00:00.123456Z\",\"schema\":2,\"event\":\"session\",\"session\":\"sbx-1\",\"labels\":{},"
      "\"tool_call\":null,\"client\":null,\"name\":null,\"dst\":null,\"upstream\":null,\"proto\":null,"
      "\"verdict\":null,\"reason\":null,\"rule\":null,\"conn\":null,\"action\":\"close\",\"policy\":\"npm\","
      "\"mode\":null,\"sources\":[\"198.18.0.2/32\"],\"dns_queries\":3,\"connections_allowed\":2,"
      "\"connections_denied\":1,\"bytes_up\":100,\"bytes_down\":2000,\"duration_ms\":1500}\n");
}

TEST_CASE("the log writer writes every line, in order, and flushes on destruction") {
  const auto path = std::filesystem::temp_directory_path() / ("airlock-log-test-" + std::to_string(::getpid()));
  std::filesystem::remove(path);
  {
    auto log = record::decision_log::open(path.string());
    REQUIRE(log.has_value());
    for (int i = 0; i < 1000; ++i) (*log)->write("{\"n\":" + std::to_string(i) + "}\n");
  }
  std::ifstream in(path);
  std::string line;
  int n = 0;
  while (std::getline(in, line)) CHECK(line == "{\"n\":" + std::to_string(n++) + "}");
  CHECK(n == 1000);
  std::filesystem::remove(path);
}

TEST_CASE("without a flush, a line reaches the file within a second, the writer idle or lingering") {
  const auto path = std::filesystem::temp_directory_path() / ("airlock-log-linger-" + std::to_string(::getpid()));
  std::filesystem::remove(path);
  auto log = record::decision_log::open(path.string());
  REQUIRE(log.has_value());
  // Readers tail the file while airlock runs (the e2e checks, `airlock explain`): however the
  // writer batches, a line must get there soon. A second is 50 lingers, slack for a busy
  // machine; a writer that waited for a flush or a full queue, or a linger of seconds, fails.
  const auto limit = std::chrono::seconds(1);
  const auto arrives_within = [&](std::uintmax_t size) {
    const auto start = std::chrono::steady_clock::now();
    while (std::chrono::steady_clock::now() - start < limit) {
      std::error_code ec;
      if (std::filesystem::file_size(path, ec) == size) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return false;
  };
  // Long enough for a writer just started, and then one whose linger found nothing, to
  // have gone to sleep: the line after it must wake it.
  const auto until_idle = 10 * record::decision_log::linger;
  std::this_thread::sleep_for(until_idle);
  (*log)->write("{\"n\":1}\n");  // the writer is idle: this line wakes it
  CHECK(arrives_within(8));
  (*log)->write("{\"n\":2}\n");  // the writer lingers after the first: nobody wakes it
  CHECK(arrives_within(16));
  std::this_thread::sleep_for(until_idle);
  (*log)->write("{\"n\":3}\n");  // idle again
  CHECK(arrives_within(24));
  log->reset();
  std::filesystem::remove(path);
}

TEST_CASE("emitted records are rendered into the writer's batch as render_json_line has them, from any thread") {
  const auto path = std::filesystem::temp_directory_path() / ("airlock-log-emit-" + std::to_string(::getpid()));
  std::filesystem::remove(path);
  record::decision_record r;
  r.event = record::event_kind::dns;
  r.name = "a\"b.test";
  r.notes = {"cache_hit"};
  const auto expected = record::render_json_line(r);
  {
    auto log = record::decision_log::open(path.string());
    REQUIRE(log.has_value());
    auto burst = [&] {
      for (int i = 0; i < 5000; ++i) (*log)->emit(r);
    };
    std::thread other(burst);
    burst();
    other.join();
    // A flush does not wait out the writer's linger, let alone one per line.
    const auto start = std::chrono::steady_clock::now();
    (*log)->flush();
    CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(1));
    CHECK((*log)->queue_depth() == 0);
    CHECK(std::filesystem::file_size(path) == 10000 * expected.size());
    (*log)->emit(r);  // after the burst, with the writer idle again
  }
  std::ifstream in(path);
  std::string line;
  int n = 0;
  while (std::getline(in, line)) n += line + "\n" == expected;
  CHECK(n == 10001);
  std::string appended = "x";
  record::append_json_line(appended, r);
  CHECK(appended == "x" + expected);
  std::filesystem::remove(path);
}

TEST_CASE("lines from several threads at once keep each thread's order; each is written or counted") {
  // The queue takes no lock: every loop pushes with a compare-and-swap, and a small queue
  // overflows under this burst, so both ways a line can go are exercised.
  const auto path = std::filesystem::temp_directory_path() / ("airlock-log-threads-" + std::to_string(::getpid()));
  std::filesystem::remove(path);
  constexpr int threads = 4, each = 20000;
  std::uint64_t dropped = 0;
  {
    auto log = record::decision_log::open(path.string(), 256);
    REQUIRE(log.has_value());
    std::vector<std::thread> loops;
    for (int t = 0; t < threads; ++t)
      loops.emplace_back([&log, t] {
        for (int n = 0; n < each; ++n)
          (*log)->write("{\"t\":" + std::to_string(t) + ",\"n\":" + std::to_string(n) + "}\n");
      });
    for (auto& l : loops) l.join();
    (*log)->flush();
    dropped = (*log)->dropped_total();
  }
  std::ifstream in(path);
  std::string line;
  int last[threads] = {-1, -1, -1, -1};
  std::uint64_t written = 0, reported = 0;
  bool ordered = true;
  while (std::getline(in, line)) {
    if (const auto at = line.find("\"log_dropped\",\"count\":"); at != std::string::npos) {
      reported += std::stoull(line.substr(at + 22));
      continue;
    }
    int t = -1, n = -1;
    REQUIRE(std::sscanf(line.c_str(), "{\"t\":%d,\"n\":%d}", &t, &n) == 2);
    REQUIRE((t >= 0 && t < threads));
    ordered = ordered && n > last[t];
    last[t] = n;
    ++written;
  }
  CHECK(ordered);
  CHECK(written + dropped == std::uint64_t{threads} * each);
  CHECK(reported == dropped);
  INFO("written " << written << ", dropped " << dropped);
  CHECK(written > 0);
  std::filesystem::remove(path);
}

TEST_CASE("overflow is counted and reported by a log_dropped line, never silent") {
  auto log = record::decision_log::open("/dev/full", 4);
  REQUIRE(log.has_value());
  for (int i = 0; i < 100; ++i) (*log)->write("{}\n");
  (*log)->flush();
  CHECK((*log)->dropped_total() == 100);
}

TEST_CASE("a log whose sink refuses writes says it is not recording, one that writes says it is") {
  auto full = record::decision_log::open("/dev/full");
  REQUIRE(full.has_value());
  CHECK((*full)->recording());  // nothing refused yet
  (*full)->write("{}\n");
  (*full)->flush();
  CHECK_FALSE((*full)->recording());
  auto fine = record::decision_log::open("/dev/null");
  REQUIRE(fine.has_value());
  (*fine)->write("{}\n");
  (*fine)->flush();
  CHECK((*fine)->recording());
}

TEST_CASE("timestamps: UTC, microseconds, leap days and the end of the clock's range") {
  const auto ts_of = [](long long micros) {
    record::decision_record r;
    r.ts = std::chrono::system_clock::time_point(std::chrono::microseconds(micros));
    const auto line = record::render_json_line(r);
    const auto start = line.find("\"ts\":\"") + 6;
    return line.substr(start, line.find('"', start) - start);
  };
  CHECK(ts_of(0) == "1970-01-01T00:00:00.000000Z");
  CHECK(ts_of(1) == "1970-01-01T00:00:00.000001Z");
  CHECK(ts_of(951868800000000LL) == "2000-03-01T00:00:00.000000Z");
  CHECK(ts_of(951868799999999LL) == "2000-02-29T23:59:59.999999Z");
  CHECK(ts_of(1709251199123456LL) == "2024-02-29T23:59:59.123456Z");
  CHECK(ts_of(4107542400000000LL) == "2100-03-01T00:00:00.000000Z");
  CHECK(ts_of(9223372036854775LL) == "2262-04-11T23:47:16.854775Z");  // system_clock's last microsecond
}

TEST_CASE("a record reset for reuse renders as a fresh one") {
  record::decision_record used;
  used.event = record::event_kind::http;
  used.session = "sbx-1";
  used.labels = {{"k", "v"}};
  used.tool_call = "t";
  used.client = "198.18.0.2:40000";
  used.name = "a-long-name-for-a-heap-string.example";
  used.dst = used.upstream = used.proto = "x";
  used.verdict = policy::verdict::allow;
  used.reason = policy::reason::host_allowed;
  used.rule = "policy.yaml:12";
  used.conn = 7;
  used.policy = used.policy_version = used.qtype = used.rcode = "y";
  used.answers = {"198.18.0.1"};
  used.method = used.path = used.process_json = used.action = used.mode = "z";
  used.status = 200;
  used.bytes_up = used.bytes_down = used.duration_ms = 1;
  used.notes = {"n"};
  used.sources = {"198.18.0.0/15"};
  used.dns_queries = used.connections_allowed = used.connections_denied = 2;
  record::reset_for_reuse(used);
  record::decision_record fresh;
  fresh.ts = used.ts;
  CHECK(record::render_json_line(used) == record::render_json_line(fresh));
  used.event = fresh.event = record::event_kind::session;
  CHECK(record::render_json_line(used) == record::render_json_line(fresh));
  used.event = fresh.event = record::event_kind::dns;
  CHECK(record::render_json_line(used) == record::render_json_line(fresh));
  CHECK(used.name.capacity() > 15);  // its memory kept
}

TEST_CASE("every byte is escaped as it always was") {
  std::string all;
  for (int c = 0; c < 256; ++c) all += static_cast<char>(c);
  std::string expected = "\"";
  for (int c = 0; c < 256; ++c) {
    char buf[8];
    if (c == '"') expected += "\\\"";
    else if (c == '\\') expected += "\\\\";
    else if (c == '\n') expected += "\\n";
    else if (c == '\r') expected += "\\r";
    else if (c == '\t') expected += "\\t";
    else if (c < 0x20 || c >= 0x7f) {
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      expected += buf;
    } else {
      expected += static_cast<char>(c);
    }
  }
  expected += '"';
  CHECK(base::json_quote(all) == expected);
  CHECK(base::json_quote("") == "\"\"");
  CHECK(base::json_quote("plain.example") == "\"plain.example\"");
  CHECK(base::json_quote("ends with \x7f") == "\"ends with \\u007f\"");
  // Each byte at each place of a long plain run (the scan reads eight bytes at a time).
  for (int c = 0; c < 256; ++c) {
    for (std::size_t at = 0; at < 19; ++at) {
      std::string text(19, 'a');
      text[at] = static_cast<char>(c);
      std::string quoted = base::json_quote(std::string(1, static_cast<char>(c)));
      quoted = quoted.substr(1, quoted.size() - 2);  // how the byte alone is escaped
      CHECK(base::json_quote(text) == "\"" + std::string(at, 'a') + quoted + std::string(18 - at, 'a') + "\"");
    }
  }
}

TEST_CASE("numbers render in full") {
  record::decision_record r;
  r.conn = 18446744073709551615ULL;
  r.bytes_up = 0;
  r.bytes_down = 1234567890123ULL;
  const auto line = record::render_json_line(r);
  CHECK(line.find("\"conn\":18446744073709551615,") != std::string::npos);
  CHECK(line.find("\"bytes_up\":0,\"bytes_down\":1234567890123,\"duration_ms\":null}") != std::string::npos);
}
