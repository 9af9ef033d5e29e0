// Memory pressure: the level's thresholds and their hysteresis, and the pressure file.
#include "base/overload.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>

#include <unistd.h>

namespace {

using airlock::base::next_level;
using airlock::base::overload_level;
using airlock::base::overload_state;
using airlock::base::pressure_from_file;

std::string file_with(const std::string& text) {
  const std::string path = "/tmp/airlock-overload-test." + std::to_string(::getpid());
  std::ofstream(path) << text;
  return path;
}

}  // namespace

TEST_CASE("levels go up at 95 % and 98 %, and down only a step lower") {
  using L = overload_level;
  CHECK(next_level(L::normal, 0.5) == L::normal);
  CHECK(next_level(L::normal, 0.949) == L::normal);
  CHECK(next_level(L::normal, 0.95) == L::shrinking);
  CHECK(next_level(L::normal, 0.98) == L::refusing);      // a jump skips the middle
  CHECK(next_level(L::shrinking, 0.93) == L::shrinking);  // not back at 94 or 93 %
  CHECK(next_level(L::shrinking, 0.899) == L::normal);
  CHECK(next_level(L::shrinking, 0.979) == L::shrinking);
  CHECK(next_level(L::shrinking, 0.98) == L::refusing);
  CHECK(next_level(L::refusing, 0.96) == L::refusing);  // not back at 96 %
  CHECK(next_level(L::refusing, 0.949) == L::shrinking);
  CHECK(next_level(L::refusing, 0.5) == L::normal);
  CHECK(next_level(L::refusing, std::nan("")) == L::refusing);  // no reading, no change
  CHECK(next_level(L::normal, 7.0) == L::refusing);             // far past the limit
}

TEST_CASE("the shared state follows its samples") {
  overload_state s;
  CHECK(s.level() == overload_level::normal);
  CHECK(s.observe(0.99) == overload_level::refusing);
  CHECK(s.refusing());
  CHECK(s.shrinking());  // refusing also shrinks
  CHECK(s.pressure() == doctest::Approx(0.99));
  CHECK(s.observe(0.96) == overload_level::refusing);
  CHECK(s.observe(0.92) == overload_level::shrinking);
  CHECK_FALSE(s.refusing());
  CHECK(s.observe(0.1) == overload_level::normal);
  CHECK_FALSE(s.shrinking());
}

TEST_CASE("a pressure file holds a fraction or a percentage; anything else is no reading") {
  auto read = [](const std::string& text) { return pressure_from_file(file_with(text)); };
  CHECK(read("0.97\n") == doctest::Approx(0.97));
  CHECK(read("  97%\n") == doctest::Approx(0.97));
  CHECK(read("1.5") == doctest::Approx(1.5));
  CHECK_FALSE(read("lots").has_value());
  CHECK_FALSE(read("").has_value());
  CHECK_FALSE(read("-0.5").has_value());
  CHECK_FALSE(read("0.9 0.8").has_value());
  CHECK_FALSE(pressure_from_file("/nonexistent/airlock-pressure").has_value());
  std::remove(file_with("").c_str());
}

TEST_CASE("resident memory is read from /proc") { CHECK(airlock::base::resident_bytes() > 1024 * 1024); }
