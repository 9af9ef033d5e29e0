#include "base/small_file.hpp"
#include "certs/ca.hpp"

#include <doctest/doctest.h>

#include <openssl/pem.h>
#include <openssl/x509v3.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <string>
#include <system_error>

namespace {

namespace fs = std::filesystem;
using namespace airlock::certs;

// A fresh directory per test, so runs never see each other's files; removed afterwards.
class temp_dir {
 public:
  temp_dir() {
    std::string pattern = (fs::temp_directory_path() / "airlock_ca_test.XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) {
      throw std::system_error(errno, std::generic_category(), "mkdtemp");
    }
    root_ = pattern;
  }
  temp_dir(const temp_dir&) = delete;
  temp_dir& operator=(const temp_dir&) = delete;
  ~temp_dir() {
    std::error_code ec;
    fs::remove_all(root_, ec);
  }
  const fs::path& root() const { return root_; }

 private:
  fs::path root_;
};

// Restores the process umask, so a test that changes it cannot leak into the next one.
class umask_guard {
 public:
  explicit umask_guard(mode_t mask) : old_{::umask(mask)} {}
  umask_guard(const umask_guard&) = delete;
  umask_guard& operator=(const umask_guard&) = delete;
  ~umask_guard() { ::umask(old_); }

 private:
  mode_t old_;
};

mode_t mode_of(const fs::path& path) {
  struct stat st {};
  REQUIRE(::stat(path.c_str(), &st) == 0);
  return st.st_mode & 07777;
}

std::string slurp(const fs::path& path) {
  auto text = airlock::base::read_file(path);
  REQUIRE(text.has_value());
  return std::move(*text);
}

x509_ptr read_cert(const fs::path& path) {
  const bio_ptr bio{BIO_new_file(path.c_str(), "r")};
  REQUIRE(bio);
  x509_ptr cert{PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr)};
  REQUIRE(cert);
  return cert;
}

evp_pkey_ptr read_key(const fs::path& path) {
  const bio_ptr bio{BIO_new_file(path.c_str(), "r")};
  REQUIRE(bio);
  evp_pkey_ptr key{PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr)};
  REQUIRE(key);
  return key;
}

std::string name_entry(const X509_NAME* name, int nid) {
  const int index = X509_NAME_get_index_by_NID(name, nid, -1);
  REQUIRE(index >= 0);
  const ASN1_STRING* data = X509_NAME_ENTRY_get_data(X509_NAME_get_entry(name, index));
  return {reinterpret_cast<const char*>(ASN1_STRING_get0_data(data)),
          static_cast<std::size_t>(ASN1_STRING_length(data))};
}

bool extension_is_critical(const X509* cert, int nid) {
  const int index = X509_get_ext_by_NID(cert, nid, -1);
  REQUIRE(index >= 0);
  return X509_EXTENSION_get_critical(X509_get_ext(cert, index)) == 1;
}

ca_files init_ok(const fs::path& dir) {
  auto files = init_ca(dir);
  INFO(files.error());
  REQUIRE(files.has_value());
  return *files;
}

}  // namespace

TEST_CASE("init_ca creates a 0700 directory, ca.crt 0644 and a PKCS#8 ca.key 0600") {
  const temp_dir tmp;
  const fs::path dir = tmp.root() / "nested" / "ca";
  const ca_files files = init_ok(dir);
  CHECK(files.cert == dir / "ca.crt");
  CHECK(files.key == dir / "ca.key");
  CHECK(mode_of(dir) == 0700);
  CHECK(mode_of(files.cert) == 0644);
  CHECK(mode_of(files.key) == 0600);
  CHECK(slurp(files.key).rfind("-----BEGIN PRIVATE KEY-----\n", 0) == 0);
  CHECK(slurp(files.cert).rfind("-----BEGIN CERTIFICATE-----\n", 0) == 0);
}

TEST_CASE("init_ca sets exact modes whatever the umask") {
  const temp_dir tmp;
  for (const mode_t mask : {mode_t{0}, mode_t{0022}, mode_t{0277}}) {
    CAPTURE(mask);
    const fs::path dir = tmp.root() / ("ca" + std::to_string(mask));
    ca_files files;
    {
      const umask_guard guard{mask};
      files = init_ok(dir);
    }
    CHECK(mode_of(dir) == 0700);
    CHECK(mode_of(files.cert) == 0644);
    CHECK(mode_of(files.key) == 0600);
  }
}

TEST_CASE("init_ca writes a self-signed ECDSA P-256 v3 certificate signed with SHA-256") {
  const temp_dir tmp;
  const ca_files files = init_ok(tmp.root() / "ca");
  const x509_ptr cert = read_cert(files.cert);
  const evp_pkey_ptr key = read_key(files.key);

  CHECK(X509_get_version(cert.get()) == X509_VERSION_3);
  CHECK(X509_check_issued(cert.get(), cert.get()) == X509_V_OK);
  CHECK(X509_verify(cert.get(), key.get()) == 1);
  CHECK(X509_check_private_key(cert.get(), key.get()) == 1);
  CHECK(X509_get_signature_nid(cert.get()) == NID_ecdsa_with_SHA256);

  const EVP_PKEY* pub = X509_get0_pubkey(cert.get());
  REQUIRE(pub != nullptr);
  CHECK(EVP_PKEY_is_a(pub, "EC") == 1);
  std::array<char, 64> group{};
  std::size_t group_len = 0;
  REQUIRE(EVP_PKEY_get_group_name(pub, group.data(), group.size(), &group_len) == 1);
  CHECK(std::string{group.data()} == "prime256v1");

  const X509_NAME* subject = X509_get_subject_name(cert.get());
  CHECK(X509_NAME_cmp(subject, X509_get_issuer_name(cert.get())) == 0);
  CHECK(name_entry(subject, NID_organizationName) == "airlock");
  const std::string cn = name_entry(subject, NID_commonName);
  CHECK(cn.rfind("airlock local CA ", 0) == 0);
  CHECK(cn.size() > std::string{"airlock local CA "}.size());
}

TEST_CASE("init_ca marks the certificate as a CA limited to signing") {
  const temp_dir tmp;
  const x509_ptr cert = read_cert(init_ok(tmp.root() / "ca").cert);

  int critical = -1;
  const std::unique_ptr<BASIC_CONSTRAINTS, openssl_deleter<&BASIC_CONSTRAINTS_free>> bc{
      static_cast<BASIC_CONSTRAINTS*>(X509_get_ext_d2i(cert.get(), NID_basic_constraints, &critical, nullptr))};
  REQUIRE(bc);
  CHECK(critical == 1);
  CHECK(bc->ca != 0);
  REQUIRE(bc->pathlen != nullptr);
  CHECK(ASN1_INTEGER_get(bc->pathlen) == 0);

  CHECK(extension_is_critical(cert.get(), NID_key_usage));
  CHECK(X509_get_key_usage(cert.get()) == (KU_KEY_CERT_SIGN | KU_CRL_SIGN));

  const ASN1_OCTET_STRING* ski = X509_get0_subject_key_id(cert.get());
  const ASN1_OCTET_STRING* aki = X509_get0_authority_key_id(cert.get());
  REQUIRE(ski != nullptr);
  REQUIRE(aki != nullptr);
  CHECK(ASN1_OCTET_STRING_cmp(ski, aki) == 0);
  CHECK(X509_get_ext_count(cert.get()) == 4);
}

TEST_CASE("init_ca sets ten years of validity from an hour ago and a positive 128-bit serial") {
  const temp_dir tmp;
  const x509_ptr cert = read_cert(init_ok(tmp.root() / "ca").cert);

  int days = 0;
  int seconds = 0;
  REQUIRE(ASN1_TIME_diff(&days, &seconds, X509_get0_notBefore(cert.get()), X509_get0_notAfter(cert.get())) == 1);
  CHECK(days >= 3650);
  CHECK(days <= 3653);
  // A null `to` means now: notBefore should lie about one hour in the past.
  REQUIRE(ASN1_TIME_diff(&days, &seconds, X509_get0_notBefore(cert.get()), nullptr) == 1);
  CHECK(days == 0);
  CHECK(seconds >= 3600);
  CHECK(seconds < 3600 + 120);

  const ASN1_INTEGER* serial = X509_get0_serialNumber(cert.get());
  CHECK(ASN1_STRING_type(serial) == V_ASN1_INTEGER);  // V_ASN1_NEG_INTEGER if negative
  const bignum_ptr bn{ASN1_INTEGER_to_BN(serial, nullptr)};
  REQUIRE(bn);
  CHECK(BN_is_negative(bn.get()) == 0);
  CHECK(BN_num_bits(bn.get()) == 128);
}

TEST_CASE("two CAs get different serials and names") {
  const temp_dir tmp;
  const x509_ptr a = read_cert(init_ok(tmp.root() / "a").cert);
  const x509_ptr b = read_cert(init_ok(tmp.root() / "b").cert);
  CHECK(ASN1_INTEGER_cmp(X509_get0_serialNumber(a.get()), X509_get0_serialNumber(b.get())) != 0);
  CHECK(X509_NAME_cmp(X509_get_subject_name(a.get()), X509_get_subject_name(b.get())) != 0);
}

TEST_CASE("the CA verifies as its own trust anchor, like openssl verify -CAfile ca.crt ca.crt") {
  const temp_dir tmp;
  const x509_ptr cert = read_cert(init_ok(tmp.root() / "ca").cert);
  const x509_store_ptr store{X509_STORE_new()};
  REQUIRE(store);
  REQUIRE(X509_STORE_add_cert(store.get(), cert.get()) == 1);
  // Strict mode also checks RFC 5280 details such as key identifiers and the CA's key usage.
  REQUIRE(X509_STORE_set_flags(store.get(), X509_V_FLAG_X509_STRICT) == 1);
  const x509_store_ctx_ptr ctx{X509_STORE_CTX_new()};
  REQUIRE(ctx);
  REQUIRE(X509_STORE_CTX_init(ctx.get(), store.get(), cert.get(), nullptr) == 1);
  const int verified = X509_verify_cert(ctx.get());
  INFO(X509_verify_cert_error_string(X509_STORE_CTX_get_error(ctx.get())));
  CHECK(verified == 1);
}

TEST_CASE("a second init_ca into the same directory fails and changes nothing") {
  const temp_dir tmp;
  const fs::path dir = tmp.root() / "ca";
  const ca_files files = init_ok(dir);
  const std::string cert_before = slurp(files.cert);
  const std::string key_before = slurp(files.key);

  const auto again = init_ca(dir);
  REQUIRE_FALSE(again.has_value());
  CHECK(again.error().find(files.key.string()) != std::string::npos);
  CHECK(again.error().find("already exists") != std::string::npos);
  CHECK(slurp(files.cert) == cert_before);
  CHECK(slurp(files.key) == key_before);
  CHECK(mode_of(files.key) == 0600);
}

TEST_CASE("init_ca refuses a directory that holds only ca.crt and creates no key") {
  const temp_dir tmp;
  const fs::path dir = tmp.root() / "ca";
  fs::create_directory(dir);
  std::ofstream{dir / "ca.crt"} << "someone else's certificate\n";

  const auto result = init_ca(dir);
  REQUIRE_FALSE(result.has_value());
  CHECK(result.error().find((dir / "ca.crt").string()) != std::string::npos);
  CHECK_FALSE(fs::exists(dir / "ca.key"));
  CHECK(slurp(dir / "ca.crt") == "someone else's certificate\n");
}

TEST_CASE("init_ca refuses a path that is a regular file") {
  const temp_dir tmp;
  const fs::path file = tmp.root() / "not_a_dir";
  std::ofstream{file} << "x";
  const auto result = init_ca(file);
  REQUIRE_FALSE(result.has_value());
  CHECK(result.error().find("not a directory") != std::string::npos);
}

TEST_CASE("load_ca loads what init_ca wrote") {
  const temp_dir tmp;
  const ca_files files = init_ok(tmp.root() / "ca");
  auto loaded = load_ca(tmp.root() / "ca");
  INFO(loaded.error());
  REQUIRE(loaded.has_value());
  REQUIRE(loaded->cert);
  REQUIRE(loaded->key);
  CHECK(X509_cmp(loaded->cert.get(), read_cert(files.cert).get()) == 0);
  CHECK(EVP_PKEY_eq(loaded->key.get(), read_key(files.key).get()) == 1);
  CHECK(ERR_peek_error() == 0);
}

TEST_CASE("load_ca refuses a key that group or others can access") {
  const temp_dir tmp;
  const ca_files files = init_ok(tmp.root() / "ca");
  for (const auto& [mode, text] : {std::pair{fs::perms{0644}, "0644"},
                                   {fs::perms{0640}, "0640"},
                                   {fs::perms{0604}, "0604"},
                                   {fs::perms{0620}, "0620"}}) {
    CAPTURE(text);
    fs::permissions(files.key, mode);
    const auto loaded = load_ca(tmp.root() / "ca");
    REQUIRE_FALSE(loaded.has_value());
    CHECK(loaded.error().find("chmod 600") != std::string::npos);
    CHECK(loaded.error().find(text) != std::string::npos);
    CHECK(loaded.error().find(files.key.string()) != std::string::npos);
  }
  fs::permissions(files.key, fs::perms{0400});
  CHECK(load_ca(tmp.root() / "ca").has_value());
}

TEST_CASE("load_ca names the file that is missing") {
  const temp_dir tmp;
  const fs::path dir = tmp.root() / "nowhere";
  const auto no_dir = load_ca(dir);
  REQUIRE_FALSE(no_dir.has_value());
  CHECK(no_dir.error().find((dir / "ca.crt").string()) != std::string::npos);
  CHECK(no_dir.error().find("does not exist") != std::string::npos);
  CHECK(no_dir.error().find("airlock ca init") != std::string::npos);

  const ca_files files = init_ok(dir);
  fs::remove(files.key);
  const auto no_key = load_ca(dir);
  REQUIRE_FALSE(no_key.has_value());
  CHECK(no_key.error().find(files.key.string()) != std::string::npos);
}

TEST_CASE("load_ca refuses a key from another CA") {
  const temp_dir tmp;
  const ca_files mine = init_ok(tmp.root() / "mine");
  const ca_files other = init_ok(tmp.root() / "other");
  fs::copy_file(other.key, mine.key, fs::copy_options::overwrite_existing);
  fs::permissions(mine.key, fs::perms{0600});

  const auto loaded = load_ca(tmp.root() / "mine");
  REQUIRE_FALSE(loaded.has_value());
  CHECK(loaded.error().find("different CAs") != std::string::npos);
  CHECK(ERR_peek_error() == 0);
}

TEST_CASE("load_ca refuses files that are not PEM") {
  const temp_dir tmp;
  const fs::path dir = tmp.root() / "ca";
  const ca_files files = init_ok(dir);
  const std::string key = slurp(files.key);

  std::ofstream{files.key, std::ios::trunc} << "not a key\n";
  const auto bad_key = load_ca(dir);
  REQUIRE_FALSE(bad_key.has_value());
  CHECK(bad_key.error().find(files.key.string() + " is not") != std::string::npos);

  std::ofstream{files.key, std::ios::trunc} << key;
  std::ofstream{files.cert, std::ios::trunc} << "not a certificate\n";
  const auto bad_cert = load_ca(dir);
  REQUIRE_FALSE(bad_cert.has_value());
  CHECK(bad_cert.error().find(files.cert.string() + " is not") != std::string::npos);
  CHECK(ERR_peek_error() == 0);
}

TEST_CASE("load_ca refuses an encrypted key instead of prompting for a passphrase") {
  const temp_dir tmp;
  const fs::path dir = tmp.root() / "ca";
  const ca_files files = init_ok(dir);
  const evp_pkey_ptr key = read_key(files.key);
  fs::remove(files.key);
  {
    const bio_ptr out{BIO_new_file(files.key.c_str(), "w")};
    REQUIRE(out);
    static constexpr char passphrase[] = "secret";
    REQUIRE(PEM_write_bio_PKCS8PrivateKey(out.get(), key.get(), EVP_aes_256_cbc(), passphrase,
                                          static_cast<int>(sizeof passphrase - 1), nullptr, nullptr) == 1);
  }
  fs::permissions(files.key, fs::perms{0600});

  const auto loaded = load_ca(dir);
  REQUIRE_FALSE(loaded.has_value());
  CHECK(loaded.error().find("unencrypted") != std::string::npos);
  CHECK(ERR_peek_error() == 0);
}
