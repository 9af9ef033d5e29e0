#include "proxy/location.hpp"

#include <doctest/doctest.h>

using airlock::proxy::location_host;

TEST_CASE("location_host: an absolute URL names its host, port and scheme") {
  const auto t = location_host("https://CDN.example.test/x?y#z");
  REQUIRE(t);
  CHECK(t->host == "CDN.example.test");
  CHECK_FALSE(t->port);
  CHECK(t->https);
  const auto p = location_host("http://h.example.test:8080/");
  REQUIRE(p);
  CHECK(p->host == "h.example.test");
  CHECK(p->port == 8080);
  CHECK_FALSE(p->https);
}

TEST_CASE("location_host: scheme-relative, userinfo and IPv6") {
  CHECK(location_host("//h.example.test/x")->host == "h.example.test");
  CHECK(location_host("https://user:pw@h.example.test/")->host == "h.example.test");
  // The last '@' ends the userinfo: what a browser connects to is after it.
  CHECK(location_host("https://allowed.test@evil.test/")->host == "evil.test");
  const auto v6 = location_host("https://[2001:db8::1]:8443/");
  REQUIRE(v6);
  CHECK(v6->host == "2001:db8::1");
  CHECK(v6->port == 8443);
  CHECK(location_host("  https://h.example.test/  ")->host == "h.example.test");
}

TEST_CASE("location_host: relative references and broken authorities name nothing") {
  CHECK_FALSE(location_host("/elsewhere"));
  CHECK_FALSE(location_host("elsewhere?x"));
  CHECK_FALSE(location_host(""));
  CHECK_FALSE(location_host("https://"));
  CHECK_FALSE(location_host("https://h:0/"));
  CHECK_FALSE(location_host("https://h:70000/"));
  CHECK_FALSE(location_host("https://h:8x/"));
  CHECK_FALSE(location_host("https://[2001:db8::1/"));
}

TEST_CASE("location_host: a scheme-relative reference keeps the connection's scheme") {
  const auto t = location_host("//h.example.test/x");
  REQUIRE(t);
  CHECK_FALSE(t->has_scheme);
  CHECK(location_host("http://h.example.test/")->has_scheme);
}
