// base::trim: white space off both ends, or the characters a caller names.
#include "base/trim.hpp"

#include <doctest/doctest.h>

#include <string_view>

using airlock::base::trim;

static_assert(trim("  a b \n") == "a b");  // usable where a constant is wanted

TEST_CASE("trim cuts ASCII white space off both ends and keeps what is between") {
  CHECK(trim("0.97\n") == "0.97");
  CHECK(trim(" \t97%\r\n") == "97%");
  CHECK(trim("max 100000\n") == "max 100000");
  CHECK(trim("a \t b") == "a \t b");
  CHECK(trim("plain") == "plain");
  CHECK(trim("") == "");
  CHECK(trim(" \t\r\n ") == "");
}

TEST_CASE("trim cuts only the characters it is given") {
  CHECK(trim(" \tvalue\t ", " \t") == "value");
  CHECK(trim(" value\r\n", " \t") == "value\r\n");  // HTTP's optional white space is no CR
  CHECK(trim("..a.b..", ".") == "a.b");
  CHECK(trim("keep", "") == "keep");
}
