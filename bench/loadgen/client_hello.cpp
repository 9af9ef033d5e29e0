#include "bench/loadgen/loadgen.hpp"

#include <openssl/bio.h>
#include <openssl/ssl.h>

#include <memory>
#include <stdexcept>

namespace airlock::bench {

std::vector<std::uint8_t> openssl_client_hello(const std::string& sni) {
  const std::unique_ptr<SSL_CTX, decltype(&SSL_CTX_free)> ctx{SSL_CTX_new(TLS_client_method()), SSL_CTX_free};
  if (!ctx) throw std::runtime_error("SSL_CTX_new failed");
  const std::unique_ptr<SSL, decltype(&SSL_free)> ssl{SSL_new(ctx.get()), SSL_free};
  if (!ssl) throw std::runtime_error("SSL_new failed");
  BIO* rbio = BIO_new(BIO_s_mem());
  BIO* wbio = BIO_new(BIO_s_mem());
  if (rbio == nullptr || wbio == nullptr) throw std::runtime_error("BIO_new failed");
  SSL_set_bio(ssl.get(), rbio, wbio);  // ssl owns both now
  // SSL_set_tlsext_host_name without its C cast, which -Wold-style-cast rejects.
  if (SSL_ctrl(ssl.get(), SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name, const_cast<char*>(sni.c_str())) != 1)
    throw std::runtime_error("cannot set SNI " + sni);
  // The client stops at WANT_READ, waiting for the server: what it wrote is the hello.
  const int rc = SSL_connect(ssl.get());
  if (SSL_get_error(ssl.get(), rc) != SSL_ERROR_WANT_READ) throw std::runtime_error("SSL_connect did not wait");
  std::vector<std::uint8_t> out(BIO_ctrl_pending(wbio));
  if (BIO_read(wbio, out.data(), static_cast<int>(out.size())) != static_cast<int>(out.size()))
    throw std::runtime_error("BIO_read short");
  return out;
}

}  // namespace airlock::bench
