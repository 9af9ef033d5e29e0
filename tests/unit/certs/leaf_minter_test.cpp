#include "certs/leaf_minter.hpp"

#include "unit/certs/test_ca.hpp"

#include <doctest/doctest.h>

#include <openssl/x509v3.h>

#include <atomic>
#include <ctime>
#include <string>
#include <thread>
#include <vector>

namespace {

using namespace airlock::certs;
using airlock::certs::testing::test_ca;

using general_names_ptr = std::unique_ptr<GENERAL_NAMES, openssl_deleter<&GENERAL_NAMES_free>>;

std::unique_ptr<leaf_minter> make_minter(const test_ca& ca, leaf_minter_options options = {}) {
  auto minter = leaf_minter::create(ca.load(), std::move(options));
  REQUIRE_MESSAGE(minter.has_value(), minter.error());
  return std::move(*minter);
}

std::shared_ptr<const leaf> get(leaf_minter& minter, std::string_view name) {
  auto value = minter.get(name);
  REQUIRE_MESSAGE(value.has_value(), value.error());
  REQUIRE(*value);
  return *value;
}

std::time_t seconds(const ASN1_TIME* when) {
  std::tm tm{};
  REQUIRE(ASN1_TIME_to_tm(when, &tm) == 1);
  return ::timegm(&tm);
}

// X509_verify_cert of CERT against a store holding only CA, as a TLS server certificate for
// HOST (a name or, with ip set, an address). Returns the X509_V_* result.
int verify(X509* cert, X509* ca, const std::string& host, bool ip = false) {
  const x509_store_ptr store{X509_STORE_new()};
  const x509_store_ctx_ptr ctx{X509_STORE_CTX_new()};
  REQUIRE(store);
  REQUIRE(ctx);
  REQUIRE(X509_STORE_add_cert(store.get(), ca) == 1);
  REQUIRE(X509_STORE_CTX_init(ctx.get(), store.get(), cert, nullptr) == 1);
  REQUIRE(X509_STORE_CTX_set_purpose(ctx.get(), X509_PURPOSE_SSL_SERVER) == 1);
  X509_VERIFY_PARAM* param = X509_STORE_CTX_get0_param(ctx.get());
  if (ip) {
    REQUIRE(X509_VERIFY_PARAM_set1_ip_asc(param, host.c_str()) == 1);
  } else {
    REQUIRE(X509_VERIFY_PARAM_set1_host(param, host.c_str(), host.size()) == 1);
  }
  if (X509_verify_cert(ctx.get()) == 1) {
    return X509_V_OK;
  }
  ERR_clear_error();
  return X509_STORE_CTX_get_error(ctx.get());
}

// The subjectAltName entries of CERT.
general_names_ptr alt_names(const X509* cert) {
  general_names_ptr names{static_cast<GENERAL_NAMES*>(X509_get_ext_d2i(cert, NID_subject_alt_name, nullptr, nullptr))};
  REQUIRE(names);
  return names;
}

std::string common_name(const X509* cert) {
  const X509_NAME* subject = X509_get_subject_name(cert);
  const int index = X509_NAME_get_index_by_NID(subject, NID_commonName, -1);
  REQUIRE(index >= 0);
  const ASN1_STRING* data = X509_NAME_ENTRY_get_data(X509_NAME_get_entry(subject, index));
  return {reinterpret_cast<const char*>(ASN1_STRING_get0_data(data)),
          static_cast<std::size_t>(ASN1_STRING_length(data))};
}

bool critical(const X509* cert, int nid) {
  const int index = X509_get_ext_by_NID(cert, nid, -1);
  REQUIRE(index >= 0);
  return X509_EXTENSION_get_critical(X509_get_ext(cert, index)) == 1;
}

TEST_CASE("a minted leaf verifies against the CA for its own name and no other") {
  const test_ca ca;
  const auto minter = make_minter(ca);
  const auto value = get(*minter, "Registry.Example.test.");
  CHECK(value->name == "registry.example.test");

  X509* ca_cert = const_cast<X509*>(minter->ca_cert());
  CHECK(verify(value->cert.get(), ca_cert, "registry.example.test") == X509_V_OK);
  CHECK(verify(value->cert.get(), ca_cert, "REGISTRY.example.test") == X509_V_OK);
  CHECK(verify(value->cert.get(), ca_cert, "other.example.test") == X509_V_ERR_HOSTNAME_MISMATCH);
  CHECK(verify(value->cert.get(), ca_cert, "example.test") == X509_V_ERR_HOSTNAME_MISMATCH);

  // Another CA does not vouch for it.
  const test_ca other;
  const loaded_ca other_ca = other.load();
  CHECK(verify(value->cert.get(), other_ca.cert.get(), "registry.example.test") != X509_V_OK);
}

TEST_CASE("a leaf carries exactly the fields and extensions of a TLS server certificate") {
  const test_ca ca;
  const std::time_t now = std::time(nullptr);
  leaf_minter_options options;
  options.now = [now] { return now; };
  const auto minter = make_minter(ca, options);
  const auto value = get(*minter, "example.test");
  X509* cert = value->cert.get();
  // OpenSSL's getters take non-const pointers even where they only read.
  X509* ca_cert = const_cast<X509*>(minter->ca_cert());

  CHECK(X509_get_version(cert) == X509_VERSION_3);
  CHECK(X509_get_signature_nid(cert) == NID_ecdsa_with_SHA256);
  CHECK(X509_NAME_cmp(X509_get_issuer_name(cert), X509_get_subject_name(ca_cert)) == 0);
  CHECK(common_name(cert) == "example.test");
  CHECK(X509_check_private_key(cert, value->key.get()) == 1);

  SUBCASE("the SAN is that one name") {
    const auto names = alt_names(cert);
    REQUIRE(sk_GENERAL_NAME_num(names.get()) == 1);
    int type = 0;
    const auto* dns = static_cast<const ASN1_IA5STRING*>(
        GENERAL_NAME_get0_value(sk_GENERAL_NAME_value(names.get(), 0), &type));
    CHECK(type == GEN_DNS);
    CHECK(std::string{reinterpret_cast<const char*>(ASN1_STRING_get0_data(dns)),
                      static_cast<std::size_t>(ASN1_STRING_length(dns))} == "example.test");
  }
  SUBCASE("validity: an hour back, a day ahead") {
    CHECK(seconds(X509_get0_notBefore(cert)) == now - 3600);
    CHECK(seconds(X509_get0_notAfter(cert)) == now + 24 * 3600);
    CHECK(value->not_after == now + 24 * 3600);
  }
  SUBCASE("positive 128-bit serial, different for each leaf") {
    const bignum_ptr serial{ASN1_INTEGER_to_BN(X509_get0_serialNumber(cert), nullptr)};
    REQUIRE(serial);
    CHECK(BN_num_bits(serial.get()) == 128);
    CHECK(BN_is_negative(serial.get()) == 0);
    const auto second = get(*minter, "second.example.test");
    CHECK(ASN1_INTEGER_cmp(X509_get0_serialNumber(cert), X509_get0_serialNumber(second->cert.get())) != 0);
  }
  SUBCASE("constraints and usages") {
    const uint32_t flags = X509_get_extension_flags(cert);
    CHECK((flags & EXFLAG_INVALID) == 0);
    CHECK((flags & EXFLAG_BCONS) != 0);
    CHECK((flags & EXFLAG_CA) == 0);
    CHECK(critical(cert, NID_basic_constraints));
    CHECK(X509_get_key_usage(cert) == KU_DIGITAL_SIGNATURE);
    CHECK(critical(cert, NID_key_usage));
    CHECK(X509_get_extended_key_usage(cert) == XKU_SSL_SERVER);
    CHECK_FALSE(critical(cert, NID_ext_key_usage));
  }
  SUBCASE("key identifiers: its own, and the CA's as authority") {
    const ASN1_OCTET_STRING* ski = X509_get0_subject_key_id(cert);
    const ASN1_OCTET_STRING* aki = X509_get0_authority_key_id(cert);
    REQUIRE(ski != nullptr);
    REQUIRE(aki != nullptr);
    CHECK(ASN1_OCTET_STRING_cmp(aki, X509_get0_subject_key_id(ca_cert)) == 0);
  }
  SUBCASE("the chain is the CA certificate") {
    REQUIRE(sk_X509_num(value->chain.get()) == 1);
    CHECK(X509_cmp(sk_X509_value(value->chain.get(), 0), ca_cert) == 0);
  }
}

TEST_CASE("all leaves share one key") {
  const test_ca ca;
  const auto minter = make_minter(ca);
  const auto a = get(*minter, "a.test");
  const auto b = get(*minter, "b.test");
  CHECK(EVP_PKEY_eq(a->key.get(), b->key.get()) == 1);
  CHECK(EVP_PKEY_get_base_id(a->key.get()) == EVP_PKEY_EC);
  CHECK(EVP_PKEY_get_bits(a->key.get()) == 256);
}

TEST_CASE("a long name is cut to 64 characters in the CN only") {
  const test_ca ca;
  const auto minter = make_minter(ca);
  const std::string label(40, 'x');
  const std::string name = label + "." + label + "." + label + ".test";  // 127 characters
  const auto value = get(*minter, name);
  CHECK(common_name(value->cert.get()) == name.substr(0, 64));
  X509* ca_cert = const_cast<X509*>(minter->ca_cert());
  CHECK(verify(value->cert.get(), ca_cert, name) == X509_V_OK);
}

TEST_CASE("IP literals get an iPAddress SAN") {
  const test_ca ca;
  const auto minter = make_minter(ca);
  X509* ca_cert = const_cast<X509*>(minter->ca_cert());

  const auto v4 = get(*minter, "192.0.2.7");
  CHECK(v4->name == "192.0.2.7");
  CHECK(verify(v4->cert.get(), ca_cert, "192.0.2.7", true) == X509_V_OK);
  CHECK(verify(v4->cert.get(), ca_cert, "192.0.2.8", true) == X509_V_ERR_IP_ADDRESS_MISMATCH);
  const auto names = alt_names(v4->cert.get());
  REQUIRE(sk_GENERAL_NAME_num(names.get()) == 1);
  CHECK(sk_GENERAL_NAME_value(names.get(), 0)->type == GEN_IPADD);
  CHECK(common_name(v4->cert.get()) == "192.0.2.7");

  const auto v6 = get(*minter, "2001:DB8:0::1");
  CHECK(v6->name == "2001:db8::1");
  CHECK(verify(v6->cert.get(), ca_cert, "2001:db8::1", true) == X509_V_OK);
  CHECK(verify(v6->cert.get(), ca_cert, "2001:db8::2", true) == X509_V_ERR_IP_ADDRESS_MISMATCH);
  // Spelled differently, the same address is the same cache entry.
  CHECK(get(*minter, "2001:db8::0:1") == v6);
}

TEST_CASE("names that cannot go into a certificate are refused with the reason") {
  const test_ca ca;
  const auto minter = make_minter(ca);
  const struct {
    std::string name;
    const char* reason;
  } cases[] = {
      {"", "empty name"},
      {".", "empty name"},
      {"a..test", "empty label"},
      {".a.test", "empty label"},
      {"a b.test", "character outside"},
      {"evil.test,bank.test", "character outside"},
      {"evil.test,DNS:bank.test", "not an IPv6 literal"},
      {"*.test", "character outside"},
      {"caf\xc3\xa9.test", "character outside"},
      {std::string(64, 'a') + ".test", "label longer than 63"},
      {std::string(63, 'a') + "." + std::string(63, 'b') + "." + std::string(63, 'c') + "." + std::string(63, 'd'),
       "longer than 253"},
      {"1:2:3", "not an IPv6 literal"},
      {"[::1]", "not an IPv6 literal"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.name);
    const auto value = minter->get(c.name);
    REQUIRE_FALSE(value.has_value());
    CHECK(value.error().find(c.reason) != std::string::npos);
    CHECK(value.error().find("cannot mint a certificate for '") == 0);
  }
  CHECK(minter->misses() == 0);
  CHECK(minter->size() == 0);
}

TEST_CASE("a warm name is served from the cache without minting") {
  const test_ca ca;
  const auto minter = make_minter(ca);
  const auto first = get(*minter, "example.test");
  CHECK(minter->misses() == 1);
  CHECK(minter->hits() == 0);
  CHECK(get(*minter, "example.test") == first);
  CHECK(get(*minter, "EXAMPLE.test.") == first);
  CHECK(minter->misses() == 1);
  CHECK(minter->hits() == 2);
  CHECK(minter->evictions() == 0);
  CHECK(minter->size() == 1);
}

TEST_CASE("the cache holds its bound and evicts the least recently used name") {
  const test_ca ca;
  leaf_minter_options options;
  options.cache_capacity = 2;
  const auto minter = make_minter(ca, options);
  const auto a = get(*minter, "a.test");
  const auto b = get(*minter, "b.test");
  CHECK(get(*minter, "a.test") == a);  // a is now more recent than b
  const auto c = get(*minter, "c.test");
  CHECK(minter->size() == 2);
  CHECK(minter->evictions() == 1);
  CHECK(get(*minter, "a.test") == a);  // kept
  CHECK(get(*minter, "c.test") == c);  // kept
  CHECK(minter->misses() == 3);
  CHECK(minter->hits() == 3);

  const auto b_again = get(*minter, "b.test");  // evicted: minted anew, a goes
  CHECK(b_again != b);
  CHECK(minter->misses() == 4);
  CHECK(minter->evictions() == 2);
  CHECK(get(*minter, "c.test") == c);
  CHECK(get(*minter, "a.test") != a);
  CHECK(minter->size() == 2);
  // Connections still holding an evicted leaf keep a valid object.
  CHECK(b->name == "b.test");
}

TEST_CASE("a leaf with less than an hour left is minted again") {
  const test_ca ca;
  std::time_t now = std::time(nullptr);
  leaf_minter_options options;
  options.now = [&now] { return now; };
  const auto minter = make_minter(ca, options);
  const std::time_t start = now;
  const auto first = get(*minter, "example.test");

  now = start + 23 * 3600 - 1;  // an hour and a second left
  CHECK(get(*minter, "example.test") == first);
  CHECK(minter->misses() == 1);

  now = start + 23 * 3600;  // exactly an hour left
  const auto second = get(*minter, "example.test");
  CHECK(second != first);
  CHECK(second->not_after == now + 24 * 3600);
  CHECK(minter->misses() == 2);
  CHECK(minter->evictions() == 0);
  CHECK(minter->size() == 1);
  CHECK(get(*minter, "example.test") == second);
}

TEST_CASE("a leaf never outlives the CA, and an expired CA mints nothing") {
  const test_ca ca;
  loaded_ca loaded = ca.load();
  std::time_t ca_not_after = 0;
  {
    std::tm tm{};
    REQUIRE(ASN1_TIME_to_tm(X509_get0_notAfter(loaded.cert.get()), &tm) == 1);
    ca_not_after = ::timegm(&tm);
  }
  std::time_t now = ca_not_after - 2 * 3600;
  leaf_minter_options options;
  options.now = [&now] { return now; };
  auto created = leaf_minter::create(std::move(loaded), options);
  REQUIRE(created.has_value());
  leaf_minter& minter = **created;

  const auto value = get(minter, "example.test");
  CHECK(value->not_after == ca_not_after);
  CHECK(seconds(X509_get0_notAfter(value->cert.get())) == ca_not_after);
  // Capped by the CA, it cannot get any better: reused even with under an hour left.
  now = ca_not_after - 60;
  CHECK(get(minter, "example.test") == value);

  now = ca_not_after;
  const auto expired = minter.get("example.test");
  REQUIRE_FALSE(expired.has_value());
  CHECK(expired.error() == "minting a certificate for example.test failed: the CA certificate has expired; create a "
                           "new CA with 'airlock ca init'");
}

TEST_CASE("options that make no sense are refused") {
  const test_ca ca;
  leaf_minter_options zero;
  zero.cache_capacity = 0;
  const auto no_cache = leaf_minter::create(ca.load(), zero);
  REQUIRE_FALSE(no_cache.has_value());
  CHECK(no_cache.error() == "leaf minter: cache capacity must be at least 1");

  leaf_minter_options short_lived;
  short_lived.validity = std::chrono::minutes{30};
  const auto too_short = leaf_minter::create(ca.load(), short_lived);
  REQUIRE_FALSE(too_short.has_value());
  CHECK(too_short.error() == "leaf minter: leaf validity must be longer than the renewal margin");
}

TEST_CASE("concurrent callers share the cache") {
  const test_ca ca;
  leaf_minter_options options;
  options.cache_capacity = 4;
  const auto minter = make_minter(ca, options);
  constexpr int threads = 4;
  constexpr int rounds = 25;
  std::atomic<int> failures{0};
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      for (int i = 0; i < rounds; ++i) {
        const std::string name = "host" + std::to_string((i + t) % 6) + ".test";
        const auto value = minter->get(name);
        if (!value.has_value() || (*value)->name != name) {
          failures.fetch_add(1);
        }
      }
    });
  }
  for (auto& worker : workers) {
    worker.join();
  }
  CHECK(failures.load() == 0);
  CHECK(minter->hits() + minter->misses() == threads * rounds);
  CHECK(minter->size() <= 4);
}

}  // namespace
