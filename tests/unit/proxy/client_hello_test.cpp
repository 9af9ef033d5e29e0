#include "proxy/client_hello.hpp"

#include <doctest/doctest.h>
#include <openssl/ssl.h>

#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <vector>

namespace ch = airlock::proxy::client_hello;

namespace {

using bytes = std::vector<std::byte>;

bytes raw(std::initializer_list<unsigned> values) {
  bytes out;
  for (const unsigned v : values) out.push_back(static_cast<std::byte>(v));
  return out;
}
bytes text(std::string_view s) {
  const auto b = std::as_bytes(std::span{s});
  return {b.begin(), b.end()};
}
bytes cat(std::initializer_list<bytes> parts) {
  bytes out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}
// `b` after its big-endian length in `width` bytes, as TLS vectors are written.
bytes with_length(const bytes& b, int width) {
  bytes out;
  for (int i = width - 1; i >= 0; --i) out.push_back(static_cast<std::byte>(b.size() >> (8 * i)));
  return cat({out, b});
}
bytes u8len(const bytes& b) { return with_length(b, 1); }
bytes u16len(const bytes& b) { return with_length(b, 2); }
bytes u24len(const bytes& b) { return with_length(b, 3); }

bytes extension(unsigned type, const bytes& body) { return cat({raw({type >> 8, type & 0xff}), u16len(body)}); }
bytes sni(std::string_view name) { return extension(0, u16len(cat({raw({0}), u16len(text(name))}))); }
bytes alpn(std::initializer_list<std::string_view> names) {
  bytes list;
  for (const auto n : names) list = cat({list, u8len(text(n))});
  return extension(16, u16len(list));
}

// version, random, empty session_id, one suite, null compression: everything before extensions.
bytes body_start() {
  return cat({raw({3, 3}), bytes(32, std::byte{0xaa}), raw({0}), u16len(raw({0x13, 0x01})), u8len(raw({0}))});
}
bytes handshake(const bytes& body, unsigned type = 1) { return cat({raw({type}), u24len(body)}); }
bytes record(const bytes& fragment, unsigned type = 22) { return cat({raw({type, 3, 1}), u16len(fragment)}); }
bytes hello(std::initializer_list<bytes> extensions) {
  bytes block;
  for (const auto& e : extensions) block = cat({block, e});
  return record(handshake(cat({body_start(), u16len(block)})));
}

// Splits a handshake message into records of `per_record` bytes (record-layer fragmentation).
bytes reframe(const bytes& message, std::size_t per_record) {
  bytes out;
  for (std::size_t i = 0; i < message.size(); i += per_record) {
    const auto end = message.begin() + static_cast<std::ptrdiff_t>(std::min(message.size(), i + per_record));
    out = cat({out, record(bytes(message.begin() + static_cast<std::ptrdiff_t>(i), end))});
  }
  return out;
}

template <typename F>
void for_each_split(const bytes& input, F fn) {
  for (std::size_t n = 0; n <= input.size(); ++n) fn(std::span<const std::byte>{input}.first(n));
}

// Every proper prefix must ask for more; the whole input must be found and pass `check`.
template <typename F>
void require_found(const bytes& input, F check, std::size_t max_size = ch::default_max_size) {
  for_each_split(input, [&](std::span<const std::byte> prefix) {
    INFO("prefix " << prefix.size() << " of " << input.size());
    const auto r = ch::parse(prefix, max_size);
    if (prefix.size() < input.size()) {
      REQUIRE(std::holds_alternative<ch::need_more>(r));
    } else {
      const auto* f = std::get_if<ch::found>(&r);
      REQUIRE(f != nullptr);
      check(*f);
    }
  });
}

// The whole input fails with `why`; no prefix may be found or not_tls, only need_more or `why`.
void require_failed(const bytes& input, ch::error why, std::size_t max_size = ch::default_max_size) {
  for_each_split(input, [&](std::span<const std::byte> prefix) {
    INFO("prefix " << prefix.size() << " of " << input.size());
    const auto r = ch::parse(prefix, max_size);
    const auto* f = std::get_if<ch::failed>(&r);
    if (prefix.size() == input.size()) {
      REQUIRE(f != nullptr);
      CHECK(f->why == why);
    } else if (f == nullptr) {
      REQUIRE(std::holds_alternative<ch::need_more>(r));
    } else {
      CHECK(f->why == why);
    }
  });
}

struct openssl_options {
  bool tls12_only = false;
  std::string sni;
  bool alpn = false;
};

// The first flight of a real OpenSSL client, which stops at WANT_READ waiting for the server.
bytes openssl_client_hello(const openssl_options& o) {
  const std::unique_ptr<SSL_CTX, decltype(&SSL_CTX_free)> ctx{SSL_CTX_new(TLS_client_method()), SSL_CTX_free};
  REQUIRE(ctx);
  if (o.tls12_only) REQUIRE(SSL_CTX_set_max_proto_version(ctx.get(), TLS1_2_VERSION) == 1);
  const std::unique_ptr<SSL, decltype(&SSL_free)> ssl{SSL_new(ctx.get()), SSL_free};
  REQUIRE(ssl);
  BIO* rbio = BIO_new(BIO_s_mem());
  BIO* wbio = BIO_new(BIO_s_mem());
  REQUIRE((rbio != nullptr && wbio != nullptr));
  SSL_set_bio(ssl.get(), rbio, wbio);  // ssl owns both now
  if (!o.sni.empty()) {
    // SSL_set_tlsext_host_name without its C cast, which -Wold-style-cast rejects.
    REQUIRE(SSL_ctrl(ssl.get(), SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name,
                     const_cast<char*>(o.sni.c_str())) == 1);
  }
  if (o.alpn) {
    static constexpr unsigned char protos[] = "\x02h2\x08http/1.1";
    REQUIRE(SSL_set_alpn_protos(ssl.get(), protos, sizeof protos - 1) == 0);  // 0 is success here
  }
  const int rc = SSL_connect(ssl.get());
  REQUIRE(SSL_get_error(ssl.get(), rc) == SSL_ERROR_WANT_READ);
  bytes out(BIO_ctrl_pending(wbio));
  REQUIRE(BIO_read(wbio, out.data(), static_cast<int>(out.size())) == static_cast<int>(out.size()));
  // Tests below take the message as everything after one record header.
  REQUIRE(out.size() == 5 + std::to_integer<std::size_t>(out[3]) * 256 + std::to_integer<std::size_t>(out[4]));
  return out;
}

}  // namespace

TEST_SUITE("client_hello") {
  TEST_CASE("real OpenSSL hellos parse at every split point") {
    const std::vector<std::string> h2_http11{"h2", "http/1.1"};
    SUBCASE("TLS 1.3 default, SNI and ALPN") {
      const auto input = openssl_client_hello({false, "example.com", true});
      require_found(input, [&](const ch::found& f) {
        CHECK(f.has_sni);
        CHECK(f.sni == "example.com");
        CHECK(f.alpn == h2_http11);
        CHECK_FALSE(f.ech);
        CHECK(f.consumed == input.size());
      });
    }
    SUBCASE("TLS 1.2 only, SNI") {
      const auto input = openssl_client_hello({true, "api.example.org", false});
      require_found(input, [&](const ch::found& f) {
        CHECK(f.sni == "api.example.org");
        CHECK(f.alpn.empty());
        CHECK(f.consumed == input.size());
      });
    }
    SUBCASE("TLS 1.3 without SNI") {
      const auto input = openssl_client_hello({false, "", false});
      require_found(input, [&](const ch::found& f) {
        CHECK_FALSE(f.has_sni);
        CHECK(f.sni.empty());
        CHECK(f.consumed == input.size());
      });
    }
    SUBCASE("TLS 1.2 without SNI, with ALPN") {
      const auto input = openssl_client_hello({true, "", true});
      require_found(input, [&](const ch::found& f) {
        CHECK_FALSE(f.has_sni);
        CHECK(f.alpn == h2_http11);
      });
    }
  }

  TEST_CASE("a hello fragmented over several records is reassembled") {
    const auto real = openssl_client_hello({false, "fragmented.example", true});
    const bytes message(real.begin() + 5, real.end());
    for (const std::size_t per_record : {1U, 7U, 100U}) {
      INFO("bytes per record " << per_record);
      const auto input = reframe(message, per_record);
      require_found(input, [&](const ch::found& f) {
        CHECK(f.sni == "fragmented.example");
        CHECK(f.alpn == std::vector<std::string>{"h2", "http/1.1"});
        CHECK(f.consumed == input.size());
      });
    }
  }

  TEST_CASE("consumed covers whole records and ignores what follows") {
    const auto real = openssl_client_hello({false, "example.com", false});
    const bytes message(real.begin() + 5, real.end());
    SUBCASE("a later record is not consumed") {
      const auto r = ch::parse(cat({real, record(text("data"), 23)}));
      REQUIRE(std::holds_alternative<ch::found>(r));
      CHECK(std::get<ch::found>(r).consumed == real.size());
    }
    SUBCASE("bytes after the message inside its record are consumed and ignored") {
      const auto input = record(cat({message, handshake(raw({1, 2, 3}), 20)}));
      require_found(input, [&](const ch::found& f) {
        CHECK(f.sni == "example.com");
        CHECK(f.consumed == input.size());
      });
    }
  }

  TEST_CASE("hand-built hellos: no extensions, GREASE, ECH") {
    SUBCASE("an old client without any extensions") {
      require_found(record(handshake(body_start())), [](const ch::found& f) {
        CHECK_FALSE(f.has_sni);
        CHECK(f.alpn.empty());
      });
    }
    SUBCASE("GREASE extensions and cipher suites are tolerated") {
      const auto body = cat({raw({3, 3}), bytes(32, std::byte{1}), raw({0}), u16len(raw({0x0a, 0x0a, 0x13, 0x01})),
                             u8len(raw({0})),
                             u16len(cat({extension(0x1a1a, {}), sni("grease.example"), extension(0xfafa, raw({0}))}))});
      require_found(record(handshake(body)), [](const ch::found& f) { CHECK(f.sni == "grease.example"); });
    }
    SUBCASE("ECH marks the name as the outer one") {
      require_found(hello({sni("public.example"), extension(0xfe0d, raw({0, 1, 2, 3}))}), [](const ch::found& f) {
        CHECK(f.ech);
        CHECK(f.sni == "public.example");
      });
    }
    SUBCASE("the name is returned raw, even with a NUL inside") {
      require_found(hello({sni(std::string_view{"a\0b.example", 11})}), [](const ch::found& f) {
        CHECK(f.sni == std::string_view{"a\0b.example", 11});
      });
    }
  }

  TEST_CASE("A5: length fields that lie are malformed") {
    const auto random = bytes(32, std::byte{0xaa});
    const auto suites = u16len(raw({0x13, 0x01}));
    const auto null_compression = u8len(raw({0}));
    SUBCASE("session_id length 0xFF fails before the rest arrives") {
      const auto start = cat({raw({3, 3}), random, raw({0xff})});
      require_failed(record(handshake(cat({start, bytes(300, std::byte{0})}))), ch::error::malformed);
      const auto early = cat({raw({22, 3, 1, 1, 0x40, 1, 0, 1, 0x3c}), start});
      require_failed(early, ch::error::malformed);
    }
    SUBCASE("odd cipher_suites") {
      require_failed(record(handshake(cat({raw({3, 3}), random, raw({0, 0, 3, 0x13, 1, 0x13}), null_compression}))),
                     ch::error::malformed);
    }
    SUBCASE("empty cipher_suites") {
      require_failed(record(handshake(cat({raw({3, 3}), random, raw({0, 0, 0}), null_compression}))),
                     ch::error::malformed);
    }
    SUBCASE("cipher_suites longer than the message") {
      require_failed(record(handshake(cat({raw({3, 3}), random, raw({0, 0x10, 0}), bytes(64, std::byte{0x13})}))),
                     ch::error::malformed);
    }
    SUBCASE("no compression method") {
      require_failed(record(handshake(cat({raw({3, 3}), random, raw({0}), suites, raw({0})}))), ch::error::malformed);
    }
    SUBCASE("extensions total larger than the sum") {
      require_failed(record(handshake(cat({body_start(), raw({0, 30}), sni("a.example")}))), ch::error::malformed);
    }
    SUBCASE("extensions total smaller than the sum") {
      require_failed(record(handshake(cat({body_start(), raw({0, 4}), sni("a.example")}))), ch::error::malformed);
    }
    SUBCASE("zero-length extensions block followed by garbage") {
      require_failed(record(handshake(cat({body_start(), raw({0, 0}), text("garbage")}))), ch::error::malformed);
    }
    SUBCASE("an extension longer than the block") {
      require_failed(record(handshake(cat({body_start(), u16len(raw({0, 0x17, 0, 9, 0}))}))), ch::error::malformed);
    }
    SUBCASE("server_name_list_length 0xFFFF with 16 bytes of data") {
      const auto list = cat({raw({0xff, 0xff, 0, 0, 13}), text("a.example.com")});
      require_failed(hello({extension(0, list)}), ch::error::malformed);
    }
    SUBCASE("host_name length running into the next extension") {
      const auto list = cat({raw({0, 12, 0, 0, 40}), text("a.example")});
      require_failed(hello({extension(0, list), alpn({"h2"})}), ch::error::malformed);
    }
    SUBCASE("legacy_version major other than 3") {
      require_failed(record(handshake(cat({raw({2, 0}), random, raw({0}), suites, null_compression}))),
                     ch::error::malformed);
    }
    SUBCASE("ALPN: empty list, empty name, list length mismatch, twice") {
      require_failed(hello({extension(16, raw({0, 0}))}), ch::error::malformed);
      require_failed(hello({extension(16, raw({0, 4, 2, 'h', '2', 0}))}), ch::error::malformed);
      require_failed(hello({extension(16, raw({0, 9, 2, 'h', '2'}))}), ch::error::malformed);
      require_failed(hello({alpn({"h2"}), alpn({"http/1.1"})}), ch::error::malformed);
    }
  }

  TEST_CASE("A6: ambiguous or unusable names are malformed") {
    SUBCASE("two server_name extensions") {
      require_failed(hello({sni("a.example"), sni("b.example")}), ch::error::malformed);
    }
    SUBCASE("two host_name entries") {
      const auto entry = [](std::string_view n) { return cat({raw({0}), u16len(text(n))}); };
      require_failed(hello({extension(0, u16len(cat({entry("a.example"), entry("b.example")})))}),
                     ch::error::malformed);
    }
    SUBCASE("name_type other than host_name") {
      require_failed(hello({extension(0, u16len(cat({raw({1}), u16len(text("a.example"))})))}), ch::error::malformed);
    }
    SUBCASE("empty name") { require_failed(hello({sni("")}), ch::error::malformed); }
    SUBCASE("empty server_name extension") { require_failed(hello({extension(0, {})}), ch::error::malformed); }
    SUBCASE("no SNI at all is found, without a name") {
      require_found(hello({alpn({"h2"})}), [](const ch::found& f) {
        CHECK_FALSE(f.has_sni);
        CHECK(f.alpn == std::vector<std::string>{"h2"});
      });
    }
  }

  TEST_CASE("A3: records and handshakes over the limits") {
    SUBCASE("record longer than 2^14 is refused from its header") {
      CHECK(std::get<ch::failed>(ch::parse(raw({22, 3, 1, 0x40, 0x01}))).why == ch::error::malformed);
      CHECK(std::holds_alternative<ch::need_more>(ch::parse(raw({22, 3, 1, 0x40, 0x00}))));
    }
    SUBCASE("handshake longer than the cap is too_large before its bytes arrive") {
      require_failed(raw({22, 3, 1, 0x40, 0, 1, 0, 0x40, 0x01}), ch::error::too_large);
      require_failed(cat({record(raw({1})), record(raw({0, 0x40, 1}))}), ch::error::too_large);
    }
    SUBCASE("the cap is the handshake body length") {
      const auto input = openssl_client_hello({false, "example.com", false});
      const std::size_t body = input.size() - 9;
      require_found(
          input, [](const ch::found& f) { CHECK(f.sni == "example.com"); }, body);
      require_failed(input, ch::error::too_large, body - 1);
    }
    SUBCASE("zero-length record") { require_failed(raw({22, 3, 1, 0, 0}), ch::error::malformed); }
  }

  TEST_CASE("records and messages that are not a hello in progress") {
    const auto real = openssl_client_hello({false, "example.com", false});
    const bytes message(real.begin() + 5, real.end());
    const bytes head(message.begin(), message.begin() + 50);
    const bytes tail(message.begin() + 50, message.end());
    SUBCASE("application data between fragments") {
      require_failed(cat({record(head), record(text("x"), 23), record(tail)}), ch::error::malformed);
    }
    SUBCASE("change_cipher_spec between fragments") {
      require_failed(cat({record(head), record(raw({1}), 20), record(tail)}), ch::error::malformed);
    }
    SUBCASE("a later record with another version major") {
      require_failed(cat({record(head), raw({22, 2, 0, 0, 1, 0})}), ch::error::malformed);
    }
    SUBCASE("a handshake that is not a client_hello") {
      require_failed(record(handshake(body_start(), 2)), ch::error::malformed);
    }
  }

  TEST_CASE("A8: bytes that are not TLS") {
    for (const std::string_view s : {"GET / HTTP/1.1\r\nHost: a\r\n\r\n", "SSH-2.0-OpenSSH_9.2\r\n", "\x15\x03\x01"}) {
      INFO(s);
      CHECK(std::holds_alternative<ch::not_tls>(ch::parse(text(s))));
      CHECK(std::holds_alternative<ch::not_tls>(ch::parse(text(s.substr(0, 1)))));
    }
    CHECK(std::holds_alternative<ch::not_tls>(ch::parse(raw({22, 2}))));
    CHECK(std::holds_alternative<ch::need_more>(ch::parse(raw({22}))));
    CHECK(std::holds_alternative<ch::need_more>(ch::parse({})));

    std::mt19937 rng{20240601};
    for (int i = 0; i < 200; ++i) {
      bytes input(64);
      for (auto& b : input) b = static_cast<std::byte>(rng());
      const auto r = ch::parse(input);
      if (input[0] != std::byte{22}) {
        CHECK(std::holds_alternative<ch::not_tls>(r));
      } else {
        CHECK_FALSE(std::holds_alternative<ch::found>(r));
      }
    }
  }
}
