#include "certs/tls_contexts.hpp"

#include "unit/certs/test_ca.hpp"

#include <doctest/doctest.h>

#include <ctime>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

namespace {

using namespace airlock::certs;
using airlock::certs::testing::test_ca;
namespace ssl = boost::asio::ssl;

ssl::context make_server() {
  auto ctx = server_context();
  REQUIRE_MESSAGE(ctx.has_value(), ctx.error());
  return std::move(*ctx);
}

ssl::context make_client(const std::vector<std::string>& extra_ca_files) {
  auto ctx = upstream_context(extra_ca_files);
  REQUIRE_MESSAGE(ctx.has_value(), ctx.error());
  return std::move(*ctx);
}

std::unique_ptr<leaf_minter> make_minter(const test_ca& ca, leaf_minter_options options = {}) {
  auto minter = leaf_minter::create(ca.load(), std::move(options));
  REQUIRE_MESSAGE(minter.has_value(), minter.error());
  return std::move(*minter);
}

struct outcome {
  bool ok = false;
  std::string client_error;  // OpenSSL's error queue when that side failed
  std::string server_error;
  std::string verify;          // verify_failure() on the client
  std::string alpn;            // what the client sees as selected
  bool negotiated_h2 = false;  // negotiated_h2() on the client
  std::string server_sni;      // what the server saw as SNI
};

// One handshake in memory: the two SSL objects talk over a BIO pair, each stepped in turn until
// both finish or one fails (then the other reads the alert once).
struct handshake_setup {
  const leaf* value = nullptr;      // installed on the server with use_leaf unless null
  std::string host;                 // given to prepare_upstream
  std::optional<std::string> alpn;  // overrides the client's ALPN list (wire format)
  bool offer_h2 = false;            // offer_h2 on the client (before alpn, which overrides it)
  bool allow_h2 = false;            // allow_h2 on the server
};

outcome handshake(ssl::context& server_ctx, ssl::context& client_ctx, const handshake_setup& setup) {
  const ssl_ptr server{SSL_new(server_ctx.native_handle())};
  const ssl_ptr client{SSL_new(client_ctx.native_handle())};
  REQUIRE(server);
  REQUIRE(client);
  if (setup.value != nullptr) {
    const auto used = use_leaf(server.get(), *setup.value);
    REQUIRE_MESSAGE(used.has_value(), used.error());
  }
  const auto prepared = prepare_upstream(client.get(), setup.host);
  REQUIRE_MESSAGE(prepared.has_value(), prepared.error());
  if (setup.offer_h2) REQUIRE(offer_h2(client.get()).has_value());
  if (setup.allow_h2) allow_h2(server.get());
  if (setup.alpn) {
    REQUIRE(SSL_set_alpn_protos(client.get(), reinterpret_cast<const unsigned char*>(setup.alpn->data()),
                                static_cast<unsigned>(setup.alpn->size())) == 0);
  }
  BIO* server_bio = nullptr;
  BIO* client_bio = nullptr;
  REQUIRE(BIO_new_bio_pair(&server_bio, 0, &client_bio, 0) == 1);
  SSL_set_bio(server.get(), server_bio, server_bio);
  SSL_set_bio(client.get(), client_bio, client_bio);
  SSL_set_accept_state(server.get());
  SSL_set_connect_state(client.get());

  struct side {
    SSL* ssl;
    std::string* error;
    bool done = false;
    bool failed = false;
  };
  outcome out;
  side sides[] = {{client.get(), &out.client_error}, {server.get(), &out.server_error}};
  const auto step = [](side& s) {
    if (s.done || s.failed) {
      return;
    }
    const int r = SSL_do_handshake(s.ssl);
    if (r == 1) {
      s.done = true;
      return;
    }
    const int err = SSL_get_error(s.ssl, r);
    if (err != SSL_ERROR_WANT_READ && err != SSL_ERROR_WANT_WRITE) {
      s.failed = true;
      *s.error = openssl_error_string();
    }
  };
  for (int round = 0; round < 20; ++round) {
    step(sides[0]);
    step(sides[1]);
    if (sides[0].failed || sides[1].failed) {
      step(sides[0]);  // let the other side read the alert
      step(sides[1]);
      break;
    }
    if (sides[0].done && sides[1].done) {
      break;
    }
  }
  ERR_clear_error();
  out.ok = sides[0].done && sides[1].done;
  out.verify = std::string{verify_failure(client.get())};
  const unsigned char* selected = nullptr;
  unsigned int selected_length = 0;
  SSL_get0_alpn_selected(client.get(), &selected, &selected_length);
  out.alpn.assign(reinterpret_cast<const char*>(selected), selected_length);
  out.negotiated_h2 = negotiated_h2(client.get());
  if (const char* sni = SSL_get_servername(server.get(), TLSEXT_NAMETYPE_host_name)) {
    out.server_sni = sni;
  }
  return out;
}

TEST_CASE("a minted leaf passes the upstream verification for its name") {
  const test_ca ca;
  const auto minter = make_minter(ca);
  auto server = make_server();
  auto client = make_client({ca.cert_file()});
  const auto value = minter->get("registry.example.test");
  REQUIRE(value.has_value());

  const outcome out = handshake(server, client, {value->get(), "registry.example.test", {}});
  CHECK_MESSAGE(out.ok, out.client_error, " / ", out.server_error);
  CHECK(out.verify.empty());
  CHECK(out.alpn == "http/1.1");
  CHECK(out.server_sni == "registry.example.test");

  SUBCASE("case and a trailing dot do not matter") {
    const outcome dotted = handshake(server, client, {value->get(), "Registry.Example.TEST.", {}});
    CHECK_MESSAGE(dotted.ok, dotted.client_error);
    CHECK(dotted.server_sni == "Registry.Example.TEST");
  }
}

TEST_CASE("a certificate for another name fails the upstream handshake as a hostname mismatch") {
  const test_ca ca;
  const auto minter = make_minter(ca);
  auto server = make_server();
  auto client = make_client({ca.cert_file()});
  const auto value = minter->get("good.example.test");
  REQUIRE(value.has_value());

  const outcome out = handshake(server, client, {value->get(), "evil.example.test", {}});
  CHECK_FALSE(out.ok);
  CHECK(out.verify == "hostname mismatch");
  CHECK(out.client_error.find("certificate verify failed") != std::string::npos);
}

TEST_CASE("a certificate from a CA the client does not trust fails the handshake") {
  const test_ca ca;
  const test_ca unrelated;
  const auto minter = make_minter(ca);
  auto server = make_server();
  auto client = make_client({unrelated.cert_file()});
  const auto value = minter->get("example.test");
  REQUIRE(value.has_value());

  const outcome out = handshake(server, client, {value->get(), "example.test", {}});
  CHECK_FALSE(out.ok);
  CHECK(out.verify == "self-signed certificate in chain");
}

TEST_CASE("an expired certificate fails the handshake as expired") {
  const test_ca ca;
  leaf_minter_options options;
  options.now = [] { return std::time(nullptr) - 30 * 24 * 3600; };
  const auto minter = make_minter(ca, options);
  auto server = make_server();
  auto client = make_client({ca.cert_file()});
  const auto value = minter->get("example.test");
  REQUIRE(value.has_value());

  const outcome out = handshake(server, client, {value->get(), "example.test", {}});
  CHECK_FALSE(out.ok);
  CHECK(out.verify == "certificate has expired");
}

TEST_CASE("IP literals: verified against the iPAddress SAN, no SNI sent") {
  const test_ca ca;
  const auto minter = make_minter(ca);
  auto server = make_server();
  auto client = make_client({ca.cert_file()});

  const auto v4 = minter->get("127.0.0.1");
  REQUIRE(v4.has_value());
  const outcome good = handshake(server, client, {v4->get(), "127.0.0.1", {}});
  CHECK_MESSAGE(good.ok, good.client_error, " / ", good.server_error);
  CHECK(good.server_sni.empty());

  const outcome wrong = handshake(server, client, {v4->get(), "127.0.0.2", {}});
  CHECK_FALSE(wrong.ok);
  CHECK(wrong.verify == "ip address mismatch");

  const auto v6 = minter->get("::1");
  REQUIRE(v6.has_value());
  const outcome bracketed = handshake(server, client, {v6->get(), "[::1]", {}});
  CHECK_MESSAGE(bracketed.ok, bracketed.client_error, " / ", bracketed.server_error);
  CHECK(bracketed.server_sni.empty());

  // A name certificate does not cover the address it resolves to.
  const auto named = minter->get("localhost");
  REQUIRE(named.has_value());
  const outcome by_address = handshake(server, client, {named->get(), "127.0.0.1", {}});
  CHECK_FALSE(by_address.ok);
  CHECK(by_address.verify == "ip address mismatch");
}

TEST_CASE("ALPN: the server selects http/1.1 and nothing else") {
  const test_ca ca;
  const auto minter = make_minter(ca);
  auto server = make_server();
  auto client = make_client({ca.cert_file()});
  const auto value = minter->get("example.test");
  REQUIRE(value.has_value());
  const leaf* leaf_value = value->get();

  // One test case without subcases, so the contexts (the system trust store is the slow part)
  // are built once.
  const outcome both = handshake(server, client, {leaf_value, "example.test", std::string{"\x02h2\x08http/1.1"}});
  CHECK_MESSAGE(both.ok, both.client_error, " / ", both.server_error);
  CHECK(both.alpn == "http/1.1");

  // Only h2: no h2, and no connection either.
  const outcome h2 = handshake(server, client, {leaf_value, "example.test", std::string{"\x02h2"}});
  CHECK_FALSE(h2.ok);
  CHECK(h2.alpn.empty());
  CHECK(h2.server_error.find("no application protocol") != std::string::npos);
  CHECK(h2.client_error.find("no application protocol") != std::string::npos);
  CHECK(h2.verify.empty());

  // No ALPN at all: served without.
  const outcome none = handshake(server, client, {leaf_value, "example.test", std::string{}});
  CHECK_MESSAGE(none.ok, none.client_error, " / ", none.server_error);
  CHECK(none.alpn.empty());
}

TEST_CASE("ALPN: h2 only where the server connection allows it, and negotiated_h2 says so on both ends") {
  const test_ca ca;
  const auto minter = make_minter(ca);
  auto server = make_server();
  auto client = make_client({ca.cert_file()});
  const auto value = minter->get("example.test");
  REQUIRE(value.has_value());
  const leaf* leaf_value = value->get();

  handshake_setup offered{leaf_value, "example.test", std::nullopt};
  offered.offer_h2 = true;
  const outcome not_allowed = handshake(server, client, offered);
  CHECK_MESSAGE(not_allowed.ok, not_allowed.client_error, " / ", not_allowed.server_error);
  CHECK(not_allowed.alpn == "http/1.1");  // offered, but the origin side did not choose it

  offered.allow_h2 = true;
  const outcome allowed = handshake(server, client, offered);
  CHECK_MESSAGE(allowed.ok, allowed.client_error, " / ", allowed.server_error);
  CHECK(allowed.alpn == "h2");
  CHECK(allowed.negotiated_h2);

  handshake_setup h1_client{leaf_value, "example.test", std::string{"\x08http/1.1"}};
  h1_client.allow_h2 = true;
  const outcome h1 = handshake(server, client, h1_client);
  CHECK(h1.alpn == "http/1.1");  // allowed, but not offered
  CHECK_FALSE(h1.negotiated_h2);
}

TEST_CASE("the server handshake fails when no leaf was installed") {
  const test_ca ca;
  auto server = make_server();
  auto client = make_client({ca.cert_file()});
  const outcome out = handshake(server, client, {nullptr, "example.test", {}});
  CHECK_FALSE(out.ok);
  CHECK(out.server_error.find("no certificate assigned") != std::string::npos);
}

TEST_CASE("use_leaf replaces what was installed before") {
  const test_ca ca;
  const auto minter = make_minter(ca);
  auto server = make_server();
  auto client = make_client({ca.cert_file()});
  const auto first = minter->get("first.test");
  const auto second = minter->get("second.test");
  REQUIRE(first.has_value());
  REQUIRE(second.has_value());
  const ssl_ptr ssl{SSL_new(server.native_handle())};
  REQUIRE(use_leaf(ssl.get(), **first).has_value());
  REQUIRE(use_leaf(ssl.get(), **second).has_value());
  CHECK(X509_cmp(SSL_get_certificate(ssl.get()), (*second)->cert.get()) == 0);
  STACK_OF(X509)* chain = nullptr;
  REQUIRE(SSL_get0_chain_certs(ssl.get(), &chain) == 1);
  CHECK(sk_X509_num(chain) == 1);
}

TEST_CASE("both contexts refuse anything older than TLS 1.2 and the server resumes nothing") {
  auto server = make_server();
  auto client = make_client({});
  CHECK(SSL_CTX_get_min_proto_version(server.native_handle()) == TLS1_2_VERSION);
  CHECK(SSL_CTX_get_min_proto_version(client.native_handle()) == TLS1_2_VERSION);
  CHECK(SSL_CTX_get_num_tickets(server.native_handle()) == 0);
  CHECK((SSL_CTX_get_options(server.native_handle()) & SSL_OP_NO_TICKET) != 0);
  CHECK(SSL_CTX_get_session_cache_mode(server.native_handle()) == SSL_SESS_CACHE_OFF);
  CHECK((SSL_CTX_get_verify_mode(client.native_handle()) & SSL_VERIFY_PEER) != 0);
}

TEST_CASE("upstream_context names the extra CA file it cannot use") {
  const test_ca ca;
  SUBCASE("missing") {
    const std::string missing = (ca.root() / "missing.pem").string();
    const auto ctx = upstream_context({ca.cert_file(), missing});
    REQUIRE_FALSE(ctx.has_value());
    CHECK(ctx.error() == "inspection.upstream_ca: cannot read " + missing + ": No such file or directory");
  }
  SUBCASE("not PEM") {
    const std::string junk = (ca.root() / "junk.pem").string();
    std::ofstream{junk} << "not a certificate\n";
    const auto ctx = upstream_context({junk});
    REQUIRE_FALSE(ctx.has_value());
    CHECK(ctx.error().find("inspection.upstream_ca: " + junk + " holds no usable PEM certificate (") == 0);
  }
}

TEST_CASE("prepare_upstream refuses an empty host") {
  auto client = make_client({});
  const ssl_ptr ssl{SSL_new(client.native_handle())};
  const auto prepared = prepare_upstream(ssl.get(), "");
  REQUIRE_FALSE(prepared.has_value());
  CHECK(prepared.error() == "upstream TLS: empty host name");
}

}  // namespace
