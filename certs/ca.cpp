#include "certs/ca.hpp"

#include "base/errno_text.hpp"
#include "base/file_mode.hpp"

#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509v3.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdint>
#include <string_view>
#include <system_error>
#include <utility>

namespace airlock::certs {
namespace {

namespace fs = std::filesystem;
using base::result;

constexpr mode_t dir_mode = 0700;
constexpr mode_t cert_mode = 0644;
constexpr mode_t key_mode = 0600;
constexpr long validity_days = 3652;  // ten years, counting the leap days
// Machines whose clocks run a little behind must still accept certificates minted right away.
constexpr long backdate_seconds = 3600;
constexpr int serial_bits = 128;
constexpr const char* init_hint = "create a CA with 'airlock ca init'";

// Creates DIR and any missing parents; only DIR itself gets dir_mode, like `mkdir -p -m 700`.
// An existing DIR is used as it is.
result<void> ensure_dir(const fs::path& dir) {
  std::error_code ec;
  if (fs::is_directory(dir, ec)) {
    return {};
  }
  if (fs::exists(dir, ec)) {
    return "ca init: " + dir.string() + " exists and is not a directory; pick another path";
  }
  if (dir.has_parent_path() && !fs::create_directories(dir.parent_path(), ec) && ec) {
    return "ca init: cannot create " + dir.parent_path().string() + ": " + ec.message();
  }
  if (::mkdir(dir.c_str(), dir_mode) != 0) {
    return "ca init: cannot create " + dir.string() + ": " + base::errno_text();
  }
  // mkdir's mode went through the umask; a restrictive one (say 0277) would leave us unable to
  // write into our own directory.
  if (::chmod(dir.c_str(), dir_mode) != 0) {
    return "ca init: cannot set mode 0700 on " + dir.string() + ": " + base::errno_text();
  }
  return {};
}

std::string already_exists(const fs::path& path) {
  return "ca init: " + path.string() +
         " already exists; refusing to overwrite an existing CA (remove the directory or pick "
         "another)";
}

// Four random bytes in hex: enough to tell CAs from different machines apart in a trust store.
std::string random_tag() {
  std::array<unsigned char, 4> raw{};
  if (RAND_bytes(raw.data(), static_cast<int>(raw.size())) != 1) {
    return {};
  }
  constexpr std::string_view digits = "0123456789abcdef";
  std::string hex;
  for (const unsigned char byte : raw) {
    hex += digits[byte >> 4U];
    hex += digits[byte & 0xFU];
  }
  return hex;
}

bool add_name_entry(X509_NAME* name, const char* field, const std::string& value) {
  return X509_NAME_add_entry_by_txt(name, field, MBSTRING_UTF8, reinterpret_cast<const unsigned char*>(value.c_str()),
                                    -1, -1, 0) == 1;
}

bool add_extension(X509* cert, X509V3_CTX* ctx, int nid, const char* value) {
  const x509_extension_ptr ext{X509V3_EXT_nconf_nid(nullptr, ctx, nid, value)};
  return ext && X509_add_ext(cert, ext.get(), -1) == 1;
}

// The caller drains the OpenSSL error queue when this returns null.
x509_ptr build_ca_cert(EVP_PKEY* key) {
  x509_ptr cert{X509_new()};
  const bignum_ptr serial{BN_new()};
  const x509_name_ptr name{X509_NAME_new()};
  const std::string tag = random_tag();
  if (!cert || !serial || !name || tag.empty()) {
    return nullptr;
  }
  X509* c = cert.get();
  // BN_RAND_TOP_ONE makes the serial exactly 128 bits and never zero; a BIGNUM is never
  // negative, so the encoded INTEGER is positive as RFC 5280 requires.
  const bool ok = X509_set_version(c, X509_VERSION_3) == 1 &&
                  BN_rand(serial.get(), serial_bits, BN_RAND_TOP_ONE, BN_RAND_BOTTOM_ANY) == 1 &&
                  BN_to_ASN1_INTEGER(serial.get(), X509_get_serialNumber(c)) != nullptr &&
                  X509_gmtime_adj(X509_getm_notBefore(c), -backdate_seconds) != nullptr &&
                  X509_time_adj_ex(X509_getm_notAfter(c), validity_days, 0, nullptr) != nullptr &&
                  add_name_entry(name.get(), "O", "airlock") &&
                  add_name_entry(name.get(), "CN", "airlock local CA " + tag) &&
                  X509_set_subject_name(c, name.get()) == 1 && X509_set_issuer_name(c, name.get()) == 1 &&
                  X509_set_pubkey(c, key) == 1;
  if (!ok) {
    return nullptr;
  }
  X509V3_CTX ctx{};
  X509V3_set_ctx(&ctx, c, c, nullptr, nullptr, 0);
  // The subject key identifier goes first: authorityKeyIdentifier copies it from the issuer,
  // which here is the certificate itself.
  if (!add_extension(c, &ctx, NID_basic_constraints, "critical,CA:TRUE,pathlen:0") ||
      !add_extension(c, &ctx, NID_key_usage, "critical,keyCertSign,cRLSign") ||
      !add_extension(c, &ctx, NID_subject_key_identifier, "hash") ||
      !add_extension(c, &ctx, NID_authority_key_identifier, "keyid:always") || X509_sign(c, key, EVP_sha256()) <= 0) {
    return nullptr;
  }
  return cert;
}

// Creates PATH exclusively with exactly MODE and fills it through WRITE_PEM; on failure the
// partial file is removed. Creating with the final mode (never a wider one) means a key file
// is not world-readable even for a moment, and O_EXCL means we never clobber or follow a
// symlink someone planted.
template <class WritePem>
result<void> write_new_file(const fs::path& path, mode_t mode, WritePem write_pem) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
  if (fd < 0) {
    if (errno == EEXIST) {
      return already_exists(path);
    }
    return "ca init: cannot create " + path.string() + ": " + base::errno_text();
  }
  const bio_ptr bio{BIO_new_fd(fd, BIO_CLOSE)};
  std::string failure;
  if (!bio) {
    ::close(fd);
    failure = openssl_error_string();
  } else if (::fchmod(fd, mode) != 0) {
    // open() applied the umask; fchmod only restores bits within MODE, never widens beyond it.
    failure = "cannot set mode " + base::octal_mode(mode) + ": " + base::errno_text();
  } else if (write_pem(bio.get()) != 1) {
    failure = openssl_error_string();
  } else if (::fsync(fd) != 0) {
    failure = base::errno_text();
  }
  if (failure.empty()) {
    return {};
  }
  ::unlink(path.c_str());
  return "ca init: writing " + path.string() + " failed: " + failure +
         "; nothing was kept, fix the cause and run it again";
}

// Opens PATH as a BIO that owns the descriptor. For the private key it also refuses a file that
// group or others can reach; fstat on the open descriptor means the mode checked belongs to the
// file actually read.
result<bio_ptr> open_for_load(const fs::path& path, const fs::path& dir, bool private_key) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    std::error_code ec;
    if (err != ENOENT) {
      return "ca load: cannot open " + path.string() + ": " + base::errno_text(err);
    }
    const std::string where = fs::is_directory(dir, ec) ? "" : " (directory " + dir.string() + " does not exist)";
    return "ca load: " + path.string() + " not found" + where + "; " + init_hint +
           " or point airlock at the directory holding ca.crt and ca.key";
  }
  bio_ptr bio{BIO_new_fd(fd, BIO_CLOSE)};
  if (!bio) {
    ::close(fd);
    return "ca load: reading " + path.string() + " failed: " + openssl_error_string();
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    return "ca load: " + path.string() + " is not a regular file; " + init_hint;
  }
  if (private_key && !base::is_private(st)) {
    return "ca load: " + path.string() + " has mode " + base::octal_mode(st.st_mode) +
           ", so group or others can get at the CA private key; run 'chmod 600 " + path.string() +
           "' (and consider the key leaked if others could read it)";
  }
  return bio;
}

// An encrypted key must fail rather than have OpenSSL prompt on the terminal of a daemon.
int refuse_passphrase(char*, int, int, void*) { return -1; }

}  // namespace

result<ca_files> init_ca(const fs::path& dir) {
  // Spelled out because C++20 lets a std::string initialise ca_files' first member in
  // parentheses, which turns off result's implicit conversion from the message.
  const auto fail = [](std::string message) {
    return result<ca_files>{boost::system::in_place_error, std::move(message)};
  };
  const ca_files files{dir / "ca.crt", dir / "ca.key"};
  if (const auto made = ensure_dir(dir); !made.has_value()) {
    return fail(made.error());
  }
  // Checked up front only to fail before any work; O_EXCL in write_new_file is what actually
  // guarantees nothing is overwritten. symlink_status, so a dangling symlink counts as taken.
  for (const fs::path& path : {files.key, files.cert}) {
    if (std::error_code ec; fs::symlink_status(path, ec).type() != fs::file_type::not_found) {
      return fail(already_exists(path));
    }
  }
  const evp_pkey_ptr key{EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-256")};
  if (!key) {
    return fail("ca init: generating a P-256 key failed: " + openssl_error_string());
  }
  const x509_ptr cert = build_ca_cert(key.get());
  if (!cert) {
    return fail("ca init: building the CA certificate failed: " + openssl_error_string());
  }
  const auto key_written = write_new_file(files.key, key_mode, [&](BIO* bio) {
    // PEM_write_bio_PrivateKey writes PKCS#8 ("BEGIN PRIVATE KEY") in OpenSSL 3.
    return PEM_write_bio_PrivateKey(bio, key.get(), nullptr, nullptr, 0, nullptr, nullptr);
  });
  if (!key_written.has_value()) {
    return fail(key_written.error());
  }
  const auto cert_written = write_new_file(files.cert, cert_mode,
                                           [&](BIO* bio) { return PEM_write_bio_X509(bio, cert.get()); });
  if (!cert_written.has_value()) {
    // A key without its certificate would make the next init refuse for no good reason.
    ::unlink(files.key.c_str());
    return fail(cert_written.error());
  }
  return files;
}

result<loaded_ca> load_ca(const fs::path& dir) {
  const fs::path cert_path = dir / "ca.crt";
  const fs::path key_path = dir / "ca.key";
  const auto cert_bio = open_for_load(cert_path, dir, false);
  if (!cert_bio.has_value()) {
    return cert_bio.error();
  }
  const auto key_bio = open_for_load(key_path, dir, true);
  if (!key_bio.has_value()) {
    return key_bio.error();
  }
  x509_ptr cert{PEM_read_bio_X509(cert_bio->get(), nullptr, nullptr, nullptr)};
  if (!cert) {
    return "ca load: " + cert_path.string() + " is not a PEM certificate (" + openssl_error_string() +
           "); restore it or " + init_hint + " in a new directory";
  }
  evp_pkey_ptr key{PEM_read_bio_PrivateKey(key_bio->get(), nullptr, refuse_passphrase, nullptr)};
  if (!key) {
    return "ca load: " + key_path.string() + " is not an unencrypted PEM private key (" + openssl_error_string() +
           "); restore it or " + init_hint + " in a new directory";
  }
  if (X509_check_private_key(cert.get(), key.get()) != 1) {
    ERR_clear_error();  // the message says it all; stale entries would be blamed on later calls
    return "ca load: " + key_path.string() + " is not the private key of " + cert_path.string() +
           " (the files come from different CAs); restore the matching pair or " + init_hint + " in a new directory";
  }
  const uint32_t flags = X509_get_extension_flags(cert.get());
  if ((flags & EXFLAG_INVALID) != 0 || (flags & EXFLAG_CA) == 0 ||
      (X509_get_key_usage(cert.get()) & KU_KEY_CERT_SIGN) == 0) {
    return "ca load: " + cert_path.string() +
           " is not a CA certificate (needs basicConstraints CA:TRUE and keyUsage keyCertSign); " + init_hint +
           " in a new directory";
  }
  if (X509_cmp_current_time(X509_get0_notAfter(cert.get())) < 0) {
    return "ca load: " + cert_path.string() + " has expired; " + init_hint +
           " in a new directory and trust the new ca.crt instead";
  }
  return loaded_ca{std::move(cert), std::move(key)};
}

}  // namespace airlock::certs
