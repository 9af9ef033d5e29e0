#include "policy/domain_name.hpp"

#include <doctest/doctest.h>

#include <string>

using airlock::policy::domain_name;
using airlock::policy::is_ip_literal;
using airlock::policy::name_error;

namespace {

std::string canonical(std::string_view text) {
  auto n = domain_name::parse(text);
  REQUIRE(n.has_value());
  return n->str();
}

name_error failure(std::string_view text) {
  auto n = domain_name::parse(text);
  REQUIRE_FALSE(n.has_value());
  return n.error();
}

}  // namespace

TEST_CASE("names are lowercased and lose one trailing dot") {
  CHECK(canonical("GitHub.COM") == "github.com");
  CHECK(canonical("github.com.") == "github.com");
  CHECK(canonical("a-b_c.example") == "a-b_c.example");
  CHECK(failure("github.com..") == name_error::empty_label);
}

TEST_CASE("IDNA names become punycode, the same as their ASCII form") {
  CHECK(canonical("bücher.example") == "xn--bcher-kva.example");
  CHECK(canonical("xn--bcher-kva.example") == "xn--bcher-kva.example");
  CHECK(canonical("BÜCHER.example") == "xn--bcher-kva.example");
}

TEST_CASE("length limits at their edges") {
  const std::string label63(63, 'a');
  CHECK(canonical(label63 + ".test") == label63 + ".test");
  CHECK(failure(std::string(64, 'a') + ".test") == name_error::label_too_long);
  // 4 labels of 62 + 3 dots = 251, plus ".t" = 253: the longest legal text form.
  const std::string l62(62, 'b');
  const std::string n253 = l62 + "." + l62 + "." + l62 + "." + l62 + ".t";
  REQUIRE(n253.size() == 253);
  CHECK(canonical(n253) == n253);
  CHECK(canonical(n253 + ".") == n253);
  CHECK(failure(n253 + "x") == name_error::too_long);
}

TEST_CASE("empty names and labels, and characters outside the alphabet, are invalid") {
  CHECK(failure("") == name_error::empty);
  CHECK(failure(".") == name_error::empty);
  CHECK(failure(".example.com") == name_error::empty_label);
  CHECK(failure("a..b") == name_error::empty_label);
  CHECK(failure("exa mple.com") == name_error::bad_character);
  CHECK(failure("exa\\.mple.com") == name_error::bad_character);
  CHECK(failure(std::string("a\0b.com", 7)) == name_error::bad_character);
  CHECK(failure("*.example.com") == name_error::bad_character);
  CHECK(failure("example.com:443") == name_error::bad_character);
}

TEST_CASE("IP literals are recognised so they are never matched as names") {
  CHECK(is_ip_literal("203.0.113.7"));
  CHECK(is_ip_literal("2001:db8::1"));
  CHECK(is_ip_literal("[2001:db8::1]"));
  CHECK_FALSE(is_ip_literal("example.com"));
  CHECK_FALSE(is_ip_literal("1.2.3"));
  CHECK_FALSE(is_ip_literal(""));
}
