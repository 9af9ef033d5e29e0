// Per-request decisions on inspected connections: request targets, paths, methods,
// and the redirects: lookup.
#include "policy/request_target.hpp"
#include "policy/snapshot.hpp"

#include "unit/policy/support.hpp"

#include <doctest/doctest.h>

using namespace airlock::policy;

namespace {

using test::compile;
using test::name;

constexpr const char* policy_yaml = R"(version: 1
inspection:
  ca_dir: /var/lib/airlock/ca
always_allow:
  - host: mirror.corp.example
    inspect: true
    paths: [/pub/]
policies:
  p:
    allow:
      - host: api.example.com
        inspect: true
        paths: [/v1/, /user]
        methods: [GET, HEAD]
      - host: api.example.com
        ports: [443]
        inspect: true
        paths: [/upload/]
        methods: [POST]
      - host: "*.cdn.example"
        inspect: true
      - host: plain.example.com
      - host: mirror.corp.example
        inspect: true
        paths: [/private/]
    deny:
      - host: secret.cdn.example
    redirects:
      - from: api.example.com
        to: ["*.cdn.example", files.example.net]
      - from: api.example.com
        to: [other.example.org]
  watch:
    mode: audit
    allow:
      - host: api.example.com
        inspect: true
        paths: [/v1/]
)";

}  // namespace

TEST_CASE("request targets: origin-form only, and every way to blur a path is recognised") {
  struct row {
    const char* target;
    target_shape shape;
    const char* path;
  };
  const row rows[] = {
      {"/", target_shape::plain, "/"},
      {"/v1/x?q=1&r=/../", target_shape::plain, "/v1/x"},  // the query is not the path
      {"/a%20b/%41", target_shape::plain, "/a%20b/%41"},
      {"/a.b/c..d", target_shape::ambiguous, nullptr},  // ".." anywhere, even inside a segment
      {"/.well-known/x", target_shape::plain, "/.well-known/x"},
      {"/v1/../admin", target_shape::ambiguous, nullptr},
      {"/v1/./x", target_shape::ambiguous, nullptr},
      {"/v1/.", target_shape::ambiguous, nullptr},
      {"/v1/%2e%2e/admin", target_shape::ambiguous, nullptr},
      {"/v1/%2E./admin", target_shape::ambiguous, nullptr},
      {"/v1/%2e/x", target_shape::ambiguous, nullptr},
      {"/v1%2fx", target_shape::ambiguous, nullptr},
      {"/v1%2Fx", target_shape::ambiguous, nullptr},
      {"/v1%5cx", target_shape::ambiguous, nullptr},
      {"/v1%5Cx", target_shape::ambiguous, nullptr},
      {"/v1\\x", target_shape::ambiguous, nullptr},
      {"//v1/x", target_shape::ambiguous, nullptr},
      {"/v1//x", target_shape::ambiguous, nullptr},
      {"", target_shape::malformed, nullptr},
      {"*", target_shape::malformed, nullptr},
      {"v1/x", target_shape::malformed, nullptr},
      {"https://api.example.com/v1/x", target_shape::malformed, nullptr},
      {"api.example.com:443", target_shape::malformed, nullptr},
      {"/v1/x y", target_shape::malformed, nullptr},
      {"/v1/x\ty", target_shape::malformed, nullptr},
      {"/v1/x#frag", target_shape::malformed, nullptr},
      {"/v1/\xc3\xa9", target_shape::malformed, nullptr},
      {"/v1/%", target_shape::malformed, nullptr},
      {"/v1/%4", target_shape::malformed, nullptr},
      {"/v1/%zz", target_shape::malformed, nullptr},
      {"/v1/x?q=%", target_shape::malformed, nullptr},
      {"/v1/%00", target_shape::malformed, nullptr},
      {"/v1/%0d%0aX-Injected:%201", target_shape::malformed, nullptr},
      {"/v1/%7f", target_shape::malformed, nullptr},
  };
  for (const auto& r : rows) {
    CAPTURE(r.target);
    const auto t = classify_target(r.target);
    CHECK(t.shape == r.shape);
    if (r.path) CHECK(t.path == r.path);
  }
  CHECK(classify_target(std::string_view("/v1/\0x", 6)).shape == target_shape::malformed);
}

TEST_CASE("path prefixes: a segment boundary, decoded, case-sensitive") {
  CHECK(path_under("/v1/x", "/v1/"));
  CHECK(path_under("/v1/", "/v1/"));
  CHECK_FALSE(path_under("/v1", "/v1/"));
  CHECK_FALSE(path_under("/v1x", "/v1/"));
  CHECK(path_under("/v1", "/v1"));
  CHECK(path_under("/v1/x", "/v1"));
  CHECK_FALSE(path_under("/v1x", "/v1"));
  CHECK_FALSE(path_under("/v", "/v1"));
  CHECK(path_under("/anything", "/"));
  CHECK(path_under("/%76%31/x", "/v1/"));  // an escaped letter is the letter
  CHECK(path_under("/a%20b/c", "/a b/"));
  CHECK_FALSE(path_under("/V1/x", "/v1/"));
}

TEST_CASE("config path prefixes and methods are checked as written") {
  CHECK_FALSE(check_path_prefix("/"));
  CHECK_FALSE(check_path_prefix("/v1/"));
  CHECK(check_path_prefix("/a b"));
  CHECK(check_path_prefix("v1/"));
  CHECK(check_path_prefix("/a/../b"));
  CHECK(check_path_prefix("/a/./b"));
  CHECK(check_path_prefix("/a/."));
  CHECK(check_path_prefix("/a//b"));
  CHECK(check_path_prefix("/a%2Fb"));
  CHECK(check_path_prefix("/a?b"));
  CHECK(check_path_prefix("/a\\b"));
  CHECK(is_method_token("GET"));
  CHECK(is_method_token("M-SEARCH"));
  CHECK_FALSE(is_method_token("get"));
  CHECK_FALSE(is_method_token(""));
  CHECK_FALSE(is_method_token("GET HEAD"));
}

TEST_CASE("decide_request: paths and methods of the rules matching name and port") {
  auto s = compile(policy_yaml);
  const auto& p = *s->find_policy("p");
  // The connection itself is allowed (and inspected) by its host rule.
  auto c = p.decide(name("api.example.com"), 443);
  CHECK(c.reason == reason::host_allowed);
  CHECK(c.inspect);

  struct row {
    const char* host;
    std::uint16_t port;
    const char* method;
    const char* target;
    verdict v;
    reason why;
    const char* rule;
  };
  const row rows[] = {
      {"api.example.com", 443, "GET", "/v1/users?page=2", verdict::allow, reason::host_allowed, "t.yaml:11"},
      {"api.example.com", 443, "HEAD", "/v1/", verdict::allow, reason::host_allowed, "t.yaml:11"},
      {"api.example.com", 443, "GET", "/user", verdict::allow, reason::host_allowed, "t.yaml:11"},
      {"api.example.com", 443, "GET", "/user/keys", verdict::allow, reason::host_allowed, "t.yaml:11"},
      {"api.example.com", 443, "GET", "/users", verdict::deny, reason::path_not_allowed, "t.yaml:11"},
      {"api.example.com", 443, "GET", "/v1", verdict::deny, reason::path_not_allowed, "t.yaml:11"},
      {"api.example.com", 443, "GET", "/v1x", verdict::deny, reason::path_not_allowed, "t.yaml:11"},
      {"api.example.com", 443, "GET", "/V1/x", verdict::deny, reason::path_not_allowed, "t.yaml:11"},
      {"api.example.com", 443, "POST", "/v1/x", verdict::deny, reason::method_not_allowed, "t.yaml:11"},
      {"api.example.com", 443, "get", "/v1/x", verdict::deny, reason::method_not_allowed, "t.yaml:11"},
      {"api.example.com", 443, "POST", "/upload/a", verdict::allow, reason::host_allowed, "t.yaml:15"},
      {"api.example.com", 443, "GET", "/upload/a", verdict::deny, reason::method_not_allowed, "t.yaml:15"},
      // The upload rule covers 443 only: on port 80 the first rule judges alone.
      {"api.example.com", 80, "POST", "/upload/a", verdict::deny, reason::path_not_allowed, "t.yaml:11"},
      {"api.example.com", 8443, "GET", "/v1/x", verdict::deny, reason::port_not_allowed, "t.yaml:11"},
      // Encodings never get past a prefix.
      {"api.example.com", 443, "GET", "/%76%31/x", verdict::allow, reason::host_allowed, "t.yaml:11"},
      {"api.example.com", 443, "GET", "/v1/../admin", verdict::deny, reason::parse_error, "t.yaml:11"},
      {"api.example.com", 443, "GET", "/v1/%2e%2e/admin", verdict::deny, reason::parse_error, "t.yaml:11"},
      {"api.example.com", 443, "GET", "/v1%2f..%2fadmin", verdict::deny, reason::parse_error, "t.yaml:11"},
      {"api.example.com", 443, "GET", "/v1/..%5cadmin", verdict::deny, reason::parse_error, "t.yaml:11"},
      {"api.example.com", 443, "GET", "//v1/x", verdict::deny, reason::parse_error, "t.yaml:11"},
      {"api.example.com", 443, "GET", "https://api.example.com/v1/x", verdict::deny, reason::parse_error, "default"},
      {"api.example.com", 443, "GET", "/v1/%00", verdict::deny, reason::parse_error, "default"},
      // Without paths: any origin-form target, even one a paths rule could not judge.
      {"x.cdn.example", 443, "DELETE", "/a//b/../c%2f", verdict::allow, reason::host_allowed, "t.yaml:20"},
      {"x.cdn.example", 443, "GET", "*", verdict::deny, reason::parse_error, "default"},
      {"plain.example.com", 80, "GET", "/x", verdict::allow, reason::host_allowed, "t.yaml:22"},
      // Deny rules and floors come first, as in decide().
      {"secret.cdn.example", 443, "GET", "/", verdict::deny, reason::host_denied, "t.yaml:27"},
      {"mirror.corp.example", 443, "GET", "/pub/x", verdict::allow, reason::host_allowed, "t.yaml:5"},
      {"mirror.corp.example", 443, "GET", "/private/x", verdict::allow, reason::host_allowed, "t.yaml:23"},
      {"mirror.corp.example", 443, "GET", "/other", verdict::deny, reason::path_not_allowed, "t.yaml:5"},
      {"elsewhere.example", 443, "GET", "/", verdict::deny, reason::host_not_allowed, "default"},
  };
  for (const auto& r : rows) {
    CAPTURE(r.host);
    CAPTURE(r.method);
    CAPTURE(r.target);
    CAPTURE(r.port);
    const auto d = p.decide_request(name(r.host), r.port, r.method, r.target);
    CHECK(to_string(d.verdict) == to_string(r.v));
    CHECK(to_string(d.reason) == to_string(r.why));
    CHECK(d.rule == r.rule);
    if (d.verdict == verdict::allow) CHECK(d.inspect == (std::string_view(r.host) != "plain.example.com"));
  }
}

TEST_CASE("decide_request in audit mode: policy denials pass, parse errors never do") {
  auto s = compile(policy_yaml);
  const auto& w = *s->find_policy("watch");
  auto d = w.decide_request(name("api.example.com"), 443, "GET", "/v2/x");
  CHECK(d.verdict == verdict::audit_deny);
  CHECK(d.reason == reason::path_not_allowed);
  CHECK(w.decide_request(name("api.example.com"), 443, "GET", "/v1/x").verdict == verdict::allow);
  CHECK(w.decide_request(name("api.example.com"), 443, "GET", "/v1/../x").verdict == verdict::deny);
  CHECK(w.decide_request(name("api.example.com"), 443, "GET", "/v1/\x01").verdict == verdict::deny);
  CHECK(w.decide_request(name("elsewhere.example"), 443, "GET", "/").verdict == verdict::audit_deny);
}

TEST_CASE("paths and methods change the version") {
  auto a = compile(policy_yaml);
  std::string other = policy_yaml;
  other.replace(other.find("[GET, HEAD]"), 11, "[GET]");
  auto b = compile(other.c_str());
  CHECK(a->version() != b->version());
}

TEST_CASE("redirect_to: the entry from an exact host whose to matches, with its mark") {
  auto s = compile(policy_yaml);
  const auto& p = *s->find_policy("p");
  const auto* r = p.redirect_to(name("api.example.com"), name("a.b.cdn.example"));
  REQUIRE(r != nullptr);
  CHECK(r->mark.to_string() == "t.yaml:29");
  CHECK(p.redirect_to(name("api.example.com"), name("files.example.net")) == r);
  const auto* second = p.redirect_to(name("api.example.com"), name("other.example.org"));
  REQUIRE(second != nullptr);
  CHECK(second->mark.to_string() == "t.yaml:31");
  CHECK(p.redirect_to(name("api.example.com"), name("cdn.example")) == nullptr);  // the apex is not a subdomain
  CHECK(p.redirect_to(name("api.example.com"), name("evilcdn.example")) == nullptr);
  CHECK(p.redirect_to(name("api.example.com"), name("x.files.example.net")) == nullptr);
  CHECK(p.redirect_to(name("x.api.example.com"), name("files.example.net")) == nullptr);
  CHECK(p.redirect_to(name("plain.example.com"), name("files.example.net")) == nullptr);
  CHECK(p.redirects_from(name("api.example.com")));
  CHECK_FALSE(p.redirects_from(name("plain.example.com")));
}

TEST_CASE("config errors: paths and methods need inspect, and are checked") {
  auto r = load_config_text(R"(version: 1
inspection:
  ca_dir: /ca
policies:
  p:
    allow:
      - host: a.example
        paths: /v1/
        inspect: false
      - cidr: 198.51.100.0/24
        methods: GET
)",
                            "f.yaml");
  REQUIRE_FALSE(r.has_value());
  std::string all;
  for (const auto& e : r.error()) all += e.to_string() + "\n";
  CHECK(all == "f.yaml:8:16: policies.p.allow[0].paths: airlock sees a request's method and path only inside TLS it "
               "terminates; add 'inspect: true' to this rule\n"
               "f.yaml:11:18: policies.p.allow[1].methods: airlock sees a request's method and path only inside TLS it "
               "terminates; add 'inspect: true' to this rule\n");
}
