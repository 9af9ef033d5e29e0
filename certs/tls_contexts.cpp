#include "certs/tls_contexts.hpp"

#include "base/errno_text.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <utility>

namespace airlock::certs {
namespace {

namespace ssl = boost::asio::ssl;
using base::result;

// The application protocols we inspect: HTTP/1.1 (proxy/http_exchange.cpp) always, h2
// (proxy/h2_bridge.cpp) on a connection whose origin chose it too (offer_h2).
constexpr std::string_view http11 = "http/1.1";
constexpr std::string_view h2 = "h2";
// The same in ALPN wire format (length-prefixed), as the client offers it.
constexpr std::array<unsigned char, 9> http11_wire = {8, 'h', 't', 't', 'p', '/', '1', '.', '1'};
constexpr std::array<unsigned char, 12> h2_and_http11_wire = {2, 'h', '2', 8, 'h', 't', 't', 'p', '/', '1', '.', '1'};

// A server connection's flag, set by offer_h2: h2 may be selected.
int h2_allowed_index() {
  static const int index = SSL_get_ex_new_index(0, nullptr, nullptr, nullptr, nullptr);
  return index;
}

result<ssl::context> fail_context(const char* what) {
  return result<ssl::context>{boost::system::in_place_error, std::string{what} + ": " + openssl_error_string()};
}

// Walks the client's ALPN list (validated by OpenSSL) for h2 (where offer_h2 allowed it)
// and http/1.1; h2 wins when both are there. Neither is fatal.
int select_protocol(SSL* ssl, const unsigned char** out, unsigned char* out_length, const unsigned char* in,
                    unsigned int in_length, void*) {
  const bool h2_ok = SSL_get_ex_data(ssl, h2_allowed_index()) != nullptr;
  const unsigned char* chosen = nullptr;
  unsigned int chosen_length = 0;
  for (unsigned int at = 0; at < in_length;) {
    const unsigned int length = in[at];
    const unsigned char* proto = in + at + 1;
    if (at + 1 + length > in_length) {
      break;
    }
    const std::string_view name{reinterpret_cast<const char*>(proto), length};
    if ((name == h2 && h2_ok) || (name == http11 && chosen == nullptr)) {
      chosen = proto;
      chosen_length = length;
      if (name == h2) break;
    }
    at += 1 + length;
  }
  if (chosen != nullptr) {
    *out = chosen;
    *out_length = static_cast<unsigned char>(chosen_length);
    return SSL_TLSEXT_ERR_OK;
  }
  // ALERT_FATAL rather than NOACK: carrying on without ALPN would leave an h2-only client
  // talking h2 to a proxy that parses HTTP/1.x. OpenSSL sends no_application_protocol.
  return SSL_TLSEXT_ERR_ALERT_FATAL;
}

// Runs while the server handshake picks its certificate: without use_leaf there is nothing
// sensible to present, so fail here with OpenSSL's "no certificate assigned" rather than later.
int require_leaf(SSL* ssl, void*) { return SSL_check_private_key(ssl) == 1 ? 1 : 0; }

bool is_ip_literal(const std::string& host) {
  std::array<unsigned char, 16> bytes{};
  return ::inet_pton(AF_INET, host.c_str(), bytes.data()) == 1 ||
         ::inet_pton(AF_INET6, host.c_str(), bytes.data()) == 1;
}

}  // namespace

result<ssl::context> server_context() {
  ssl_ctx_ptr ctx{SSL_CTX_new(TLS_server_method())};
  if (!ctx) {
    return fail_context("creating the server TLS context failed");
  }
  SSL_CTX* c = ctx.get();
  // No resumption at all (no tickets in TLS 1.2 or 1.3, no session cache): the sandbox is one
  // hop away, so a full handshake costs little, and a resumed session skips the certificate, so
  // a session set up for one name could be resumed on a connection meant for another. Not having
  // resumption means not having to reason about that. Renegotiation is refused as well.
  SSL_CTX_set_options(c, SSL_OP_NO_TICKET | SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION);
  SSL_CTX_set_session_cache_mode(c, SSL_SESS_CACHE_OFF);
  if (SSL_CTX_set_min_proto_version(c, TLS1_2_VERSION) != 1 || SSL_CTX_set_num_tickets(c, 0) != 1) {
    return fail_context("configuring the server TLS context failed");
  }
  SSL_CTX_set_alpn_select_cb(c, select_protocol, nullptr);
  SSL_CTX_set_cert_cb(c, require_leaf, nullptr);
  return ssl::context{ctx.release()};
}

result<void> use_leaf(SSL* ssl, const leaf& value) {
  // override=1 replaces whatever was installed before, chain included.
  if (SSL_use_cert_and_key(ssl, value.cert.get(), value.key.get(), value.chain.get(), 1) != 1) {
    return "installing the certificate for " + value.name + " failed: " + openssl_error_string();
  }
  return {};
}

result<ssl::context> upstream_context(const std::vector<std::string>& extra_ca_files) {
  ssl_ctx_ptr ctx{SSL_CTX_new(TLS_client_method())};
  if (!ctx) {
    return fail_context("creating the upstream TLS context failed");
  }
  SSL_CTX* c = ctx.get();
  SSL_CTX_set_options(c, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION);
  SSL_CTX_set_verify(c, SSL_VERIFY_PEER, nullptr);
  // SSL_CTX_set_alpn_protos returns 0 on success, unlike its neighbours.
  if (SSL_CTX_set_min_proto_version(c, TLS1_2_VERSION) != 1 ||
      SSL_CTX_set_alpn_protos(c, http11_wire.data(), http11_wire.size()) != 0) {
    return fail_context("configuring the upstream TLS context failed");
  }
  if (SSL_CTX_set_default_verify_paths(c) != 1) {
    return fail_context("loading the system trust store failed");
  }
  for (const std::string& file : extra_ca_files) {
    // Opened here first only for the message: OpenSSL's own error for a missing file is
    // "system library" noise, the user needs the path and errno.
    const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      return result<ssl::context>{boost::system::in_place_error,
                                  "inspection.upstream_ca: cannot read " + file + ": " + base::errno_text()};
    }
    ::close(fd);
    if (SSL_CTX_load_verify_file(c, file.c_str()) != 1) {
      return result<ssl::context>{boost::system::in_place_error, "inspection.upstream_ca: " + file +
                                                                     " holds no usable PEM certificate (" +
                                                                     openssl_error_string() + ")"};
    }
  }
  return ssl::context{ctx.release()};
}

result<void> prepare_upstream(SSL* ssl, std::string_view host) {
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  if (!host.empty() && host.back() == '.') {
    host.remove_suffix(1);  // SNI and name checks both want the name without the root dot
  }
  const std::string name{host};
  if (name.empty()) {
    return std::string{"upstream TLS: empty host name"};
  }
  if (is_ip_literal(name)) {
    if (X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), name.c_str()) != 1) {
      return "upstream TLS: cannot verify against address " + name + ": " + openssl_error_string();
    }
    return {};
  }
  SSL_set_hostflags(ssl, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
  // SSL_set_tlsext_host_name without its C cast, which -Wold-style-cast rejects; OpenSSL copies
  // the name and never writes through the pointer.
  if (SSL_ctrl(ssl, SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name, const_cast<char*>(name.c_str())) != 1 ||
      SSL_set1_host(ssl, name.c_str()) != 1) {
    return "upstream TLS: cannot set server name " + name + ": " + openssl_error_string();
  }
  return {};
}

result<void> offer_h2(SSL* upstream) {
  if (SSL_set_alpn_protos(upstream, h2_and_http11_wire.data(), h2_and_http11_wire.size()) != 0)
    return "upstream TLS: cannot offer h2: " + openssl_error_string();
  return {};
}

void allow_h2(SSL* server) {
  static int allowed = 1;  // any non-null pointer says yes
  SSL_set_ex_data(server, h2_allowed_index(), &allowed);
}

bool negotiated_h2(const SSL* ssl) {
  const unsigned char* proto = nullptr;
  unsigned int length = 0;
  SSL_get0_alpn_selected(ssl, &proto, &length);
  return std::string_view(reinterpret_cast<const char*>(proto), proto == nullptr ? 0 : length) == h2;
}

std::string_view verify_failure(const SSL* ssl) {
  const long code = SSL_get_verify_result(ssl);
  switch (code) {
    case X509_V_OK: return {};
    case X509_V_ERR_HOSTNAME_MISMATCH: return "hostname mismatch";
    case X509_V_ERR_IP_ADDRESS_MISMATCH: return "ip address mismatch";
    case X509_V_ERR_CERT_HAS_EXPIRED: return "certificate has expired";
    case X509_V_ERR_CERT_NOT_YET_VALID: return "certificate is not yet valid";
    case X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT: return "self-signed certificate";
    case X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN: return "self-signed certificate in chain";
    case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT:
    case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY:
    case X509_V_ERR_UNABLE_TO_VERIFY_LEAF_SIGNATURE: return "unknown issuer";
    case X509_V_ERR_CERT_SIGNATURE_FAILURE: return "bad certificate signature";
    case X509_V_ERR_INVALID_CA: return "invalid CA certificate";
    case X509_V_ERR_INVALID_PURPOSE: return "certificate not for TLS servers";
    case X509_V_ERR_CERT_CHAIN_TOO_LONG:
    case X509_V_ERR_PATH_LENGTH_EXCEEDED: return "certificate chain too long";
    case X509_V_ERR_EE_KEY_TOO_SMALL:
    case X509_V_ERR_CA_KEY_TOO_SMALL: return "key too small";
    case X509_V_ERR_CA_MD_TOO_WEAK: return "signature algorithm too weak";
    default:
      // OpenSSL's text (static storage): stable for a given OpenSSL version only.
      return X509_verify_cert_error_string(code);
  }
}

}  // namespace airlock::certs
