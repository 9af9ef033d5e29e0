// credentials: loading (every refusal, with its message) and credential_for().
#include "policy/snapshot.hpp"

#include "unit/policy/support.hpp"

#include <doctest/doctest.h>

#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace fs = std::filesystem;
using namespace airlock::policy;

namespace {

// A private directory of secret files, removed at the end of the test.
struct secret_dir {
  fs::path dir;
  secret_dir() {
    std::string tmpl = (fs::temp_directory_path() / "airlock-cred-XXXXXX").string();
    REQUIRE(::mkdtemp(tmpl.data()) != nullptr);
    dir = tmpl;
  }
  ~secret_dir() { fs::remove_all(dir); }
  std::string add(const std::string& file, std::string_view content, ::mode_t mode = 0600) const {
    const auto p = dir / file;
    std::ofstream(p, std::ios::binary) << content;
    REQUIRE(::chmod(p.c_str(), mode) == 0);
    return p.string();
  }
};

std::string replace_all(std::string text, std::string_view what, const std::string& with) {
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + with.size()))
    text.replace(at, what.size(), with);
  return text;
}

std::string errors_of(const config_result& r) {
  std::string out;
  if (r.has_value()) return out;
  for (const auto& e : r.error()) out += e.to_string() + "\n";
  return out;
}

constexpr const char* base = R"(version: 1
inspection:
  ca_dir: /ca
policies:
  p:
    allow:
      - host: api.example.com
        inspect: true
      - host: "*.pkg.example"
        inspect: true
      - regex: 'git[0-9]+\.example\.org'
        inspect: true
      - host: relayed.example.com
    credentials:
)";

using test::name;

}  // namespace

TEST_CASE("credentials load and the longest path prefix wins") {
  secret_dir d;
  const auto whole = d.add("whole", "Bearer whole-host\n");
  const auto v2 = d.add("v2", "Bearer v2-only");
  const auto pkg = d.add("pkg", "token pkg\r\n");
  const auto git = d.add("git", "Basic Z2l0\n", 0400);
  auto r = load_config_text(std::string(base) +
                                "      - {host: api.example.com, header: Authorization, secret_file: " + whole +
                                "}\n      - {host: API.example.com., path: /v2/, header: Authorization, "
                                "secret_file: " +
                                v2 +
                                "}\n      - {host: a.pkg.example, header: X-Api-Key, "
                                "secret_file: " +
                                pkg +
                                "}\n      - {host: git7.example.org, header: "
                                "Authorization, secret_file: " +
                                git + "}\n",
                            "c.yaml");
  REQUIRE_MESSAGE(r.has_value(), errors_of(r));
  REQUIRE(r->policies.at(0).credentials.size() == 4);
  CHECK(r->policies[0].credentials[1].host == "api.example.com");
  auto snap = *snapshot::compile(*r);
  const auto& p = *snap->find_policy("p");

  const auto* c = p.credential_for(name("api.example.com"), "/v1/x");
  REQUIRE(c != nullptr);
  CHECK(c->header == "Authorization");
  CHECK(c->value == "Bearer whole-host");  // one trailing newline dropped
  CHECK(c->rule == "c.yaml:15");
  const auto* c2 = p.credential_for(name("api.example.com"), "/v2/repos?x=1");
  REQUIRE(c2 != nullptr);
  CHECK(c2->value == "Bearer v2-only");
  CHECK(c2->rule == "c.yaml:16");
  CHECK(p.credential_for(name("api.example.com"), "/v2")->value == "Bearer whole-host");  // "/v2/" is not "/v2"
  CHECK(p.credential_for(name("api.example.com"), "/v2x")->value == "Bearer whole-host");
  // An ambiguous path gets only a whole-host credential; a malformed target none.
  CHECK(p.credential_for(name("api.example.com"), "/v2/../v2/x")->value == "Bearer whole-host");
  CHECK(p.credential_for(name("api.example.com"), "/v2%2fx")->value == "Bearer whole-host");
  CHECK(p.credential_for(name("api.example.com"), "http://api.example.com/v2/") == nullptr);
  CHECK(p.credential_for(name("a.pkg.example"), "/")->value == "token pkg");  // CRLF dropped as one newline
  CHECK(p.credential_for(name("git7.example.org"), "/")->value == "Basic Z2l0");
  CHECK(p.credential_for(name("b.pkg.example"), "/") == nullptr);  // exact host only
  CHECK(p.credential_for(name("relayed.example.com"), "/") == nullptr);
  CHECK(p.credential_for(name("example.com"), "/") == nullptr);
  // The secret is in no message and not in the version.
  CHECK(snap->version().find("whole") == std::string::npos);
}

TEST_CASE("a changed secret file path or header changes the version; the secret does not") {
  secret_dir d;
  const auto a = d.add("a", "one");
  const auto text = std::string(base) + "      - {host: api.example.com, header: Authorization, secret_file: " + a +
                    "}\n";
  auto first = *snapshot::compile(*load_config_text(text, "c.yaml"));
  d.add("a", "two");
  auto second = *snapshot::compile(*load_config_text(text, "c.yaml"));
  CHECK(first->version() == second->version());
  auto third = *snapshot::compile(*load_config_text(replace_all(text, "Authorization", "X-Token"), "c.yaml"));
  CHECK(first->version() != third->version());
}

TEST_CASE("credential errors: each says what is wrong, where, and never the secret") {
  secret_dir d;
  const auto ok = d.add("ok", "s3cret-value");
  const auto readable = d.add("readable", "s3cret-value", 0644);
  const auto group = d.add("group", "s3cret-value", 0620);
  const auto empty = d.add("empty", "\n");
  const auto lines = d.add("lines", "s3cret\nvalue\n");
  const auto cr = d.add("cr", "s3cret\rvalue");
  const auto nul = d.add("nul", std::string_view("s3cret\0value", 12));
  const auto ctl = d.add("ctl", "s3cret\x1bvalue");
  const auto big = d.add("big", std::string(9000, 'x'));
  std::string entries = R"(      - {host: relayed.example.com, header: Authorization, secret_file: OK}
      - {host: other.example.com, header: Authorization, secret_file: OK}
      - {host: "*.pkg.example", header: Authorization, secret_file: OK}
      - {host: api.example.com, header: Connection, secret_file: OK}
      - {host: api.example.com, header: "Bad Header", secret_file: OK}
      - {host: api.example.com, header: content-length, secret_file: OK}
      - {host: api.example.com, header: Authorization, secret_file: relative/file}
      - {host: api.example.com, header: Authorization, secret_file: DIR/missing}
      - {host: api.example.com, header: Authorization, secret_file: DIR}
      - {host: api.example.com, header: Authorization, secret_file: READABLE}
      - {host: api.example.com, header: Authorization, secret_file: GROUP}
      - {host: api.example.com, header: Authorization, secret_file: EMPTY}
      - {host: api.example.com, header: Authorization, secret_file: LINES}
      - {host: api.example.com, header: Authorization, secret_file: CR}
      - {host: api.example.com, header: Authorization, secret_file: NUL}
      - {host: api.example.com, header: Authorization, secret_file: CTL}
      - {host: api.example.com, header: Authorization, secret_file: BIG}
      - {host: api.example.com, path: v1, header: Authorization, secret_file: OK}
      - {host: api.example.com, header: Authorization}
      - {host: api.example.com, header: Authorization, secret_file: OK, secret: x}
      - {host: api.example.com, header: Authorization, secret_file: OK}
      - {host: api.example.com, path: /, header: X-Other, secret_file: OK}
)";
  for (auto [key, path] : {std::pair<const char*, std::string>{"READABLE", readable},
                           {"GROUP", group},
                           {"EMPTY", empty},
                           {"LINES", lines},
                           {"CR", cr},
                           {"NUL", nul},
                           {"CTL", ctl},
                           {"BIG", big},
                           {"DIR", d.dir.string()},
                           {"OK", ok}})
    entries = replace_all(entries, key, path);
  auto r = load_config_text(std::string(base) + entries, "c.yaml");
  REQUIRE_FALSE(r.has_value());
  const auto got = errors_of(r);
  const std::string dir = d.dir.string();
  const std::string expected = replace_all(
      "c.yaml:15:16: policies.p.credentials[0].host: no allow rule with 'inspect: true' in policy p covers "
      "'relayed.example.com'; credentials are only added inside TLS airlock terminates, never on plaintext or relayed "
      "connections\n"
      "c.yaml:16:16: policies.p.credentials[1].host: no allow rule with 'inspect: true' in policy p covers "
      "'other.example.com'; credentials are only added inside TLS airlock terminates, never on plaintext or relayed "
      "connections\n"
      "c.yaml:17:16: policies.p.credentials[2].host: a credential names one exact host, not a wildcard\n"
      "c.yaml:18:41: policies.p.credentials[3].header: 'Connection' is a hop-by-hop or framing header airlock "
      "controls; use the header the origin reads, such as Authorization\n"
      "c.yaml:19:41: policies.p.credentials[4].header: 'Bad Header' is not a header name (letters, digits and "
      "!#$%&'*+-.^_`|~ only)\n"
      "c.yaml:20:41: policies.p.credentials[5].header: 'content-length' is a hop-by-hop or framing header airlock "
      "controls; use the header the origin reads, such as Authorization\n"
      "c.yaml:21:69: policies.p.credentials[6].secret_file: 'relative/file': expected an absolute path\n"
      "c.yaml:22:69: policies.p.credentials[7].secret_file: 'DIR/missing': cannot open (No such file or directory)\n"
      "c.yaml:23:69: policies.p.credentials[8].secret_file: 'DIR' is not a regular file\n"
      "c.yaml:24:69: policies.p.credentials[9].secret_file: 'DIR/readable' has mode 0644, open to group or others; a "
      "secret file must be private to its owner: run 'chmod 600 DIR/readable'\n"
      "c.yaml:25:69: policies.p.credentials[10].secret_file: 'DIR/group' has mode 0620, open to group or others; a "
      "secret file must be private to its owner: run 'chmod 600 DIR/group'\n"
      "c.yaml:26:69: policies.p.credentials[11].secret_file: 'DIR/empty' is empty; put the header's value in it\n"
      "c.yaml:27:69: policies.p.credentials[12].secret_file: 'DIR/lines' has a line break at byte 7; a header value "
      "is one line (only one trailing newline is dropped)\n"
      "c.yaml:28:69: policies.p.credentials[13].secret_file: 'DIR/cr' has a line break at byte 7; a header value is "
      "one line (only one trailing newline is dropped)\n"
      "c.yaml:29:69: policies.p.credentials[14].secret_file: 'DIR/nul' has a NUL byte at byte 7; a header value is "
      "text\n"
      "c.yaml:30:69: policies.p.credentials[15].secret_file: 'DIR/ctl' has a control character at byte 7; a header "
      "value is text\n"
      "c.yaml:31:69: policies.p.credentials[16].secret_file: 'DIR/big' is larger than 8192 bytes; a secret is one "
      "header value\n"
      "c.yaml:32:39: policies.p.credentials[17].path: 'v1': a path starts with '/'\n"
      "c.yaml:33:9: policies.p.credentials[18]: needs 'host', 'header' and 'secret_file' ('path' is optional)\n"
      "c.yaml:34:98: unknown key 'secret' in policies.p.credentials[19]; expected one of: host, path, header, "
      "secret_file\n"
      "c.yaml:35:9: policies.p.credentials[20]: 'api.example.com' under '/' already has a credential at line 34; "
      "one header per host and path\n"
      "c.yaml:36:9: policies.p.credentials[21]: 'api.example.com' under '/' already has a credential at line 34; "
      "one header per host and path\n",
      "DIR", dir);
  CHECK(got == expected);
  CHECK(got.find("s3cret") == std::string::npos);
}

TEST_CASE("credentials is a list of mappings") {
  auto r = load_config_text(std::string(base) + "      host: api.example.com\n", "c.yaml");
  CHECK(errors_of(r) ==
        "c.yaml:15:7: policies.p.credentials: expected a list of {host: NAME, path: /PREFIX (optional), header: NAME, "
        "secret_file: /PATH}\n");
}
