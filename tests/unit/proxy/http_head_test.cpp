#include "proxy/http_head.hpp"

#include <doctest/doctest.h>

#include <string>
#include <string_view>

namespace hh = airlock::proxy::http_head;

namespace {

std::span<const std::byte> as_bytes(std::string_view s) { return std::as_bytes(std::span{s.data(), s.size()}); }

hh::result parse(std::string_view s, std::size_t max_size = hh::default_max_size) {
  return hh::parse(as_bytes(s), max_size);
}

template <typename F>
void for_each_split(std::string_view input, F fn) {
  for (std::size_t n = 0; n <= input.size(); ++n) fn(input.substr(0, n));
}

// Every prefix shorter than the head asks for more; the whole input gives the request.
hh::request require_request(std::string_view input) {
  hh::request out;
  for_each_split(input, [&](std::string_view prefix) {
    INFO("prefix " << prefix.size() << " of " << input.size());
    const auto r = parse(prefix);
    if (const auto* req = std::get_if<hh::request>(&r)) {
      CHECK(prefix.size() >= req->head_size);
      if (prefix.size() == input.size()) out = *req;
    } else {
      REQUIRE(std::holds_alternative<hh::need_more>(r));
      REQUIRE(prefix.size() < input.size());
    }
  });
  return out;
}

// The whole input fails with `why`; a prefix gives either need_more or the same failure.
void require_failed(std::string_view input, hh::error why) {
  for_each_split(input, [&](std::string_view prefix) {
    INFO("prefix " << prefix.size() << " of " << input.size());
    const auto r = parse(prefix);
    const auto* f = std::get_if<hh::failed>(&r);
    if (prefix.size() == input.size()) {
      REQUIRE(f != nullptr);
      CHECK(f->why == why);
    } else if (f == nullptr) {
      REQUIRE(std::holds_alternative<hh::need_more>(r));
    } else {
      CHECK(f->why == why);
    }
  });
}

}  // namespace

TEST_SUITE("http_head") {
  TEST_CASE("origin-form with Host, at every split point") {
    const std::string_view head = "GET /index.html?q=1 HTTP/1.1\r\nHost: Example.COM\r\nAccept: */*\r\n\r\n";
    const auto r = require_request(head);
    CHECK(r.method == "GET");
    CHECK(r.target == "/index.html?q=1");
    CHECK(r.host == "Example.COM");
    CHECK_FALSE(r.port.has_value());
    CHECK_FALSE(r.absolute_form);
    CHECK(r.head_size == head.size());
  }

  TEST_CASE("a body after the head is not part of it") {
    const std::string head = "POST /upload HTTP/1.1\r\nHost: example.com:8080\r\nContent-Length: 5\r\n\r\n";
    const auto r = require_request(head + "hello");
    CHECK(r.host == "example.com");
    CHECK(r.port == 8080);
    CHECK(r.head_size == head.size());
  }

  TEST_CASE("Host header forms") {
    CHECK(require_request("GET / HTTP/1.1\r\nHOST:   a.example \t\r\n\r\n").host == "a.example");
    CHECK(require_request("GET / HTTP/1.0\r\nhost: a.example\r\n\r\n").host == "a.example");
    SUBCASE("IPv6 literal") {
      const auto r = require_request("GET / HTTP/1.1\r\nHost: [2001:db8::1]\r\n\r\n");
      CHECK(r.host == "2001:db8::1");
      CHECK_FALSE(r.port.has_value());
    }
    SUBCASE("IPv6 literal with port") {
      const auto r = require_request("GET / HTTP/1.1\r\nHost: [::1]:65535\r\n\r\n");
      CHECK(r.host == "::1");
      CHECK(r.port == 65535);
    }
    SUBCASE("OPTIONS *") { CHECK(require_request("OPTIONS * HTTP/1.1\r\nHost: a.example\r\n\r\n").target == "*"); }
  }

  TEST_CASE("bad ports, userinfo and odd hosts are malformed") {
    for (const std::string_view host :
         {"a.example:0", "a.example:65536", "a.example:80a", "a.example:", "a.example:+80", "a.example:080080",
          "user@a.example", "[::1", "[::1]x", "[]", "[v1.x]", "a b", "a/b", "a:1:2", "%zz.example"}) {
      INFO(host);
      require_failed("GET / HTTP/1.1\r\nHost: " + std::string{host} + "\r\n\r\n", hh::error::malformed);
    }
  }

  TEST_CASE("missing Host") {
    require_failed("GET / HTTP/1.1\r\nAccept: */*\r\n\r\n", hh::error::missing_host);
    require_failed("GET / HTTP/1.0\r\n\r\n", hh::error::missing_host);
    require_failed("GET / HTTP/1.1\r\nHost:\r\n\r\n", hh::error::missing_host);
    require_failed("GET / HTTP/1.1\r\nHost: :80\r\n\r\n", hh::error::missing_host);
  }

  TEST_CASE("duplicate Host is refused even when equal") {
    require_failed("GET / HTTP/1.1\r\nHost: a.example\r\nHost: a.example\r\n\r\n", hh::error::conflicting_host);
    require_failed("GET / HTTP/1.1\r\nHost: a.example\r\nhOsT: b.example\r\n\r\n", hh::error::conflicting_host);
    require_failed("CONNECT a.example:443 HTTP/1.1\r\nHost: a\r\nHost: a\r\n\r\n", hh::error::conflicting_host);
  }

  TEST_CASE("absolute-form") {
    SUBCASE("without Host") {
      const auto r = require_request("GET http://Example.com:8080/a/b?c HTTP/1.1\r\n\r\n");
      CHECK(r.host == "Example.com");
      CHECK(r.port == 8080);
      CHECK(r.absolute_form);
      CHECK(r.target == "http://Example.com:8080/a/b?c");
    }
    SUBCASE("scheme is case-insensitive, https allowed, path optional") {
      CHECK(require_request("GET HTTP://a.example HTTP/1.0\r\n\r\n").host == "a.example");
      const auto r = require_request("GET hTTpS://[::1]?x HTTP/1.1\r\n\r\n");
      CHECK(r.host == "::1");
      CHECK(r.absolute_form);
    }
    SUBCASE("with an agreeing Host") {
      CHECK(require_request("GET http://a.example/ HTTP/1.1\r\nHost: A.EXAMPLE\r\n\r\n").host == "a.example");
      CHECK_FALSE(require_request("GET http://a.example/ HTTP/1.1\r\nHost: a.example:80\r\n\r\n").port.has_value());
      CHECK(require_request("GET http://a.example:80/ HTTP/1.1\r\nHost: a.example\r\n\r\n").port == 80);
      CHECK(require_request("GET https://a.example:443/ HTTP/1.1\r\nHost: a.example\r\n\r\n").port == 443);
    }
    SUBCASE("with a disagreeing Host") {
      require_failed("GET http://a.example/ HTTP/1.1\r\nHost: b.example\r\n\r\n", hh::error::conflicting_host);
      require_failed("GET http://a.example/ HTTP/1.1\r\nHost: a.example:8080\r\n\r\n", hh::error::conflicting_host);
      require_failed("GET https://a.example/ HTTP/1.1\r\nHost: a.example:80\r\n\r\n", hh::error::conflicting_host);
      require_failed("GET http://a.example/ HTTP/1.1\r\nHost:\r\n\r\n", hh::error::conflicting_host);
      require_failed("GET http://a.example/ HTTP/1.1\r\nHost: a@b\r\n\r\n", hh::error::malformed);
    }
    SUBCASE("bad authorities and schemes") {
      require_failed("GET http://allowed.example@evil.example/ HTTP/1.1\r\n\r\n", hh::error::malformed);
      require_failed("GET http:///path HTTP/1.1\r\n\r\n", hh::error::missing_host);
      require_failed("GET ftp://a.example/ HTTP/1.1\r\n\r\n", hh::error::malformed);
      require_failed("GET a.example/ HTTP/1.1\r\nHost: a.example\r\n\r\n", hh::error::malformed);
      require_failed("GET http://a.example:99999/ HTTP/1.1\r\n\r\n", hh::error::malformed);
    }
  }

  TEST_CASE("CONNECT authority-form") {
    SUBCASE("name and port") {
      const auto r = require_request("CONNECT a.example:443 HTTP/1.1\r\nHost: a.example:443\r\n\r\n");
      CHECK(r.method == "CONNECT");
      CHECK(r.host == "a.example");
      CHECK(r.port == 443);
      CHECK_FALSE(r.absolute_form);
    }
    SUBCASE("Host is not consulted") {
      CHECK(require_request("CONNECT a.example:443 HTTP/1.1\r\nHost: b.example:1\r\n\r\n").host == "a.example");
      CHECK(require_request("CONNECT a.example:443 HTTP/1.0\r\n\r\n").port == 443);
    }
    SUBCASE("IPv6") {
      const auto r = require_request("CONNECT [2001:db8::2]:8443 HTTP/1.1\r\n\r\n");
      CHECK(r.host == "2001:db8::2");
      CHECK(r.port == 8443);
    }
    SUBCASE("port required, no path, no userinfo") {
      require_failed("CONNECT a.example HTTP/1.1\r\n\r\n", hh::error::malformed);
      require_failed("CONNECT [::1] HTTP/1.1\r\n\r\n", hh::error::malformed);
      require_failed("CONNECT /a HTTP/1.1\r\nHost: a.example\r\n\r\n", hh::error::malformed);
      require_failed("CONNECT http://a.example:443/ HTTP/1.1\r\n\r\n", hh::error::malformed);
      require_failed("CONNECT u@a.example:443 HTTP/1.1\r\n\r\n", hh::error::malformed);
      require_failed("CONNECT :443 HTTP/1.1\r\n\r\n", hh::error::missing_host);
    }
  }

  TEST_CASE("framing tricks are malformed") {
    SUBCASE("obs-fold") {
      require_failed("GET / HTTP/1.1\r\nHost: a.example\r\n b.example\r\n\r\n", hh::error::malformed);
    }
    SUBCASE("whitespace before the first header") {
      require_failed("GET / HTTP/1.1\r\n\tHost: a.example\r\n\r\n", hh::error::malformed);
    }
    SUBCASE("whitespace between name and colon") {
      require_failed("GET / HTTP/1.1\r\nHost : a.example\r\n\r\n", hh::error::malformed);
    }
    SUBCASE("bare LF") {
      require_failed("GET / HTTP/1.1\nHost: a.example\r\n\r\n", hh::error::malformed);
      require_failed("GET / HTTP/1.1\r\nHost: a.example\n\r\n", hh::error::malformed);
      require_failed("GET / HTTP/1.1\r\nHost: a.example\r\n\n", hh::error::malformed);
    }
    SUBCASE("bare CR") { require_failed("GET / HTTP/1.1\r\nX: a\rb\r\nHost: a\r\n\r\n", hh::error::malformed); }
    SUBCASE("control bytes in a value, non-token name") {
      static constexpr char with_nul[] = "GET / HTTP/1.1\r\nX: a\0b\r\nHost: a\r\n\r\n";
      require_failed(std::string_view{with_nul, sizeof with_nul - 1}, hh::error::malformed);
      require_failed("GET / HTTP/1.1\r\nX: a\x7f\r\nHost: a\r\n\r\n", hh::error::malformed);
      require_failed("GET / HTTP/1.1\r\nX(y): a\r\nHost: a\r\n\r\n", hh::error::malformed);
      require_failed("GET / HTTP/1.1\r\n: a\r\nHost: a\r\n\r\n", hh::error::malformed);
    }
    SUBCASE("request line") {
      require_failed("GET  / HTTP/1.1\r\n\r\n", hh::error::malformed);
      require_failed("GET / HTTP/1.1 \r\n\r\n", hh::error::malformed);
      require_failed("GET / HTTP/2.0\r\n\r\n", hh::error::malformed);
      require_failed("GET / http/1.1\r\n\r\n", hh::error::malformed);
      require_failed("GET /\xc3\xa9 HTTP/1.1\r\n\r\n", hh::error::malformed);
      require_failed("GET * HTTP/1.1\r\nHost: a\r\n\r\n", hh::error::malformed);
    }
  }

  TEST_CASE("obs-text in an ordinary value is allowed") {
    CHECK(require_request("GET / HTTP/1.1\r\nX-Name: caf\xc3\xa9\r\nHost: a.example\r\n\r\n").host == "a.example");
  }

  TEST_CASE("size limit") {
    const std::string line = "GET / HTTP/1.1\r\nHost: a.example\r\n";
    SUBCASE("a head without its end past 64 KiB is too_large") {
      const std::string big = line + "X: " + std::string(hh::default_max_size, 'a');
      const auto r = parse(std::string_view{big}.substr(0, hh::default_max_size + 1));
      REQUIRE(std::holds_alternative<hh::failed>(r));
      CHECK(std::get<hh::failed>(r).why == hh::error::too_large);
      CHECK(std::holds_alternative<hh::need_more>(parse(std::string_view{big}.substr(0, hh::default_max_size - 1))));
    }
    SUBCASE("a head of exactly max_size is fine; one byte more is not") {
      const std::string head = line + "\r\n";
      CHECK(std::holds_alternative<hh::request>(parse(head, head.size())));
      CHECK(std::get<hh::failed>(parse(head, head.size() - 1)).why == hh::error::too_large);
      CHECK(std::get<hh::failed>(parse(std::string_view{head}.substr(0, 10), 10)).why == hh::error::too_large);
    }
  }

  TEST_CASE("not HTTP, decided from the first bytes") {
    for (const std::string_view s : {"\x16\x03\x01", "SSH-2.0-OpenSSH_9.2\r\n", "get / HTTP/1.1\r\n", " GET /",
                                     "\r\nGET /", "GET\t/", "ABCDEFGHIJKLMNOPQRSTUVWXYZABCDEFGHIJ / HTTP/1.1"}) {
      INFO(s);
      CHECK(std::holds_alternative<hh::not_http>(parse(s)));
    }
    CHECK(std::holds_alternative<hh::not_http>(parse("\x16")));
    for (const std::string_view s : {"", "G", "GE", "GET", "GET ", "GET /", "GET / HTTP/1.", "GET / HTTP/1.1\r"}) {
      INFO(s);
      CHECK(std::holds_alternative<hh::need_more>(parse(s)));
    }
  }

  TEST_CASE("an explicit proxy forwards one request: hop-by-hop headers out, Connection: close in") {
    const std::string head =
        "GET http://a.test/x HTTP/1.1\r\nHost: a.test\r\nProxy-Connection: keep-alive\r\n"
        "Proxy-Authorization: Basic c2VjcmV0\r\nconnection: Keep-Alive\r\nKeep-Alive: timeout=5\r\n"
        "Accept: */*\r\nUpgrade: h2c\r\nTE: trailers\r\n\r\n";
    REQUIRE(std::holds_alternative<hh::request>(parse(head)));
    CHECK(hh::forward_head(as_bytes(head)) ==
          "GET http://a.test/x HTTP/1.1\r\nHost: a.test\r\nAccept: */*\r\nConnection: close\r\n\r\n");
  }
}

TEST_CASE("origin_target: what an absolute-form request asks its server for") {
  CHECK(hh::origin_target("/v1/x?q", false) == "/v1/x?q");
  CHECK(hh::origin_target("http://h/v1/x?q", true) == "/v1/x?q");
  CHECK(hh::origin_target("http://h", true) == "/");
  // The authority ends at '?': a path in a query is no path.
  CHECK(hh::origin_target("https://h?/v1/allowed/", true) == "/?/v1/allowed/");
  CHECK(hh::origin_target("http://h#/v1/", true) == "/");
  CHECK(hh::origin_target("http://h:8080/a", true) == "/a");
}
