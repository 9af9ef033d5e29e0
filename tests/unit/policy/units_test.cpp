#include "policy/units.hpp"

#include <doctest/doctest.h>

using namespace airlock::policy;
using namespace std::chrono_literals;

TEST_CASE("sizes are powers of 1024 with an optional B or iB") {
  struct row {
    const char* text;
    std::uint64_t bytes;
  };
  for (auto [text, bytes] : {row{"1048576", 1048576}, row{"512K", 512ULL << 10}, row{"512k", 512ULL << 10},
                             row{"64M", 64ULL << 20}, row{"64MB", 64ULL << 20}, row{"64MiB", 64ULL << 20},
                             row{"1.5G", 3ULL << 29}, row{"2t", 2ULL << 40}, row{"12B", 12}, row{".5K", 512}}) {
    CAPTURE(text);
    auto r = parse_size(text);
    REQUIRE(r.has_value());
    CHECK(*r == bytes);
  }
}

TEST_CASE("bad sizes say what was expected") {
  for (const char* text : {"", "M", "12X", "1.2.3G", "-5M", "5 M", "5Mb2", "0", "0K", "99999999999T"}) {
    CAPTURE(text);
    auto r = parse_size(text);
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().find(std::string("'") + text + "'") == 0);
  }
  CHECK(parse_size("12X").error() == "'12X': expected a size like 512M or 2G (K, M, G, T are powers of 1024)");
  CHECK(parse_size("0").error() == "'0': must be at least one byte");
}

TEST_CASE("durations: units, sequences and a bare number of seconds") {
  struct row {
    const char* text;
    std::chrono::milliseconds ms;
  };
  for (auto [text, ms] : {row{"90", 90s}, row{"250ms", 250ms}, row{"30s", 30s}, row{"5m", 5min}, row{"2h", 2h},
                          row{"1h30m", 90min}, row{"1.5s", 1500ms}, row{"1m30s", 90s}, row{"1d", 24h}}) {
    CAPTURE(text);
    auto r = parse_duration(text);
    REQUIRE(r.has_value());
    CHECK(*r == ms);
  }
  for (const char* text : {"", "s", "10x", "1h30", "0", "0s", "31d", "5 s", "-1s"}) {
    CAPTURE(text);
    CHECK_FALSE(parse_duration(text).has_value());
  }
  CHECK(parse_duration("10x").error() ==
        "'10x': expected a duration like 90s, 5m, 1h30m or 250ms (a bare number is seconds)");
}

TEST_CASE("cpus and counts") {
  CHECK(*parse_cpus("0.5") == doctest::Approx(0.5));
  CHECK(*parse_cpus("2") == doctest::Approx(2));
  for (const char* text : {"0", "0.001", "1025", "two", "1.5x", ""}) {
    CAPTURE(text);
    CHECK_FALSE(parse_cpus(text).has_value());
  }
  CHECK(*parse_count("64", 8, 100) == 64);
  CHECK_FALSE(parse_count("7", 8, 100).has_value());
  CHECK_FALSE(parse_count("101", 8, 100).has_value());
  CHECK_FALSE(parse_count("10.0", 8, 100).has_value());
  CHECK(parse_count("7", 8, 100).error() == "'7': expected a whole number from 8 to 100");
}

TEST_CASE("formatting for messages") {
  CHECK(format_size(64ULL << 20) == "64 MiB");
  CHECK(format_size(3ULL << 29) == "1.5 GiB");
  CHECK(format_size(12) == "12 B");
  CHECK(format_duration(90s) == "1m30s");
  CHECK(format_duration(250ms) == "250ms");
  CHECK(format_duration(2h) == "2h");
  CHECK(format_duration(5s) == "5s");
}
