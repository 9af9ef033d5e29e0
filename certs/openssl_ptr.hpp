#pragma once

// Owning pointers for the OpenSSL objects airlock handles, so every early return frees what it
// allocated, plus one function that turns the OpenSSL error queue into a message.

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>

#include <array>
#include <memory>
#include <string>

namespace airlock::certs {

// Deleter that calls FreeFn; stateless, so each unique_ptr stays one pointer wide.
template <auto FreeFn>
struct openssl_deleter {
  template <class T>
  void operator()(T* p) const noexcept {
    FreeFn(p);
  }
};

using x509_ptr = std::unique_ptr<X509, openssl_deleter<&X509_free>>;
using evp_pkey_ptr = std::unique_ptr<EVP_PKEY, openssl_deleter<&EVP_PKEY_free>>;
using evp_pkey_ctx_ptr = std::unique_ptr<EVP_PKEY_CTX, openssl_deleter<&EVP_PKEY_CTX_free>>;
using x509_name_ptr = std::unique_ptr<X509_NAME, openssl_deleter<&X509_NAME_free>>;
using x509_extension_ptr = std::unique_ptr<X509_EXTENSION, openssl_deleter<&X509_EXTENSION_free>>;
using bio_ptr = std::unique_ptr<BIO, openssl_deleter<&BIO_free_all>>;
using ssl_ctx_ptr = std::unique_ptr<SSL_CTX, openssl_deleter<&SSL_CTX_free>>;
using ssl_ptr = std::unique_ptr<SSL, openssl_deleter<&SSL_free>>;
using x509_store_ptr = std::unique_ptr<X509_STORE, openssl_deleter<&X509_STORE_free>>;
using x509_store_ctx_ptr = std::unique_ptr<X509_STORE_CTX, openssl_deleter<&X509_STORE_CTX_free>>;
using bignum_ptr = std::unique_ptr<BIGNUM, openssl_deleter<&BN_free>>;

// Drains this thread's OpenSSL error queue into one line, oldest error first.
// Draining matters as much as the text: a stale entry left behind would be blamed on the next,
// unrelated call.
inline std::string openssl_error_string() {
  std::string line;
  const char* data = nullptr;
  int flags = 0;
  while (const unsigned long code = ERR_get_error_all(nullptr, nullptr, nullptr, &data, &flags)) {
    if (!line.empty()) {
      line += "; ";
    }
    const char* lib = ERR_lib_error_string(code);
    const char* reason = ERR_reason_error_string(code);
    if (reason != nullptr) {
      if (lib != nullptr) {
        line += lib;
        line += ": ";
      }
      line += reason;
    } else {
      std::array<char, 256> buf{};
      ERR_error_string_n(code, buf.data(), buf.size());
      line += buf.data();
    }
    if ((flags & ERR_TXT_STRING) != 0 && data != nullptr && *data != '\0') {
      line += " (";
      line += data;
      line += ')';
    }
  }
  return line.empty() ? std::string{"no detail from OpenSSL"} : line;
}

}  // namespace airlock::certs
