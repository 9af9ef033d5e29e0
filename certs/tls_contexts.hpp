#pragma once

// The two TLS contexts of an inspected connection: the sandbox-facing server side, which presents
// a minted leaf, and the upstream client side, which verifies the origin like a browser would.
// Both return an asio::ssl::context that owns its SSL_CTX; set up each connection's SSL object
// (stream.native_handle()) with use_leaf / prepare_upstream before its handshake.

#include "base/result.hpp"
#include "certs/leaf_minter.hpp"

#include <boost/asio/ssl/context.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace airlock::certs {

// Sandbox side: TLS 1.2 or newer, OpenSSL's default ciphers, no session tickets or resumption.
// ALPN: "h2" when the client offers it and allow_h2 was called on the connection, else
// "http/1.1" when the client offers it; a client that offers neither fails the handshake with
// a no_application_protocol alert; a client that sends no ALPN is served without it. The handshake fails if use_leaf
// was not called on the connection. The error is one line for the log (it only happens when OpenSSL itself fails).
base::result<boost::asio::ssl::context> server_context();

// Installs LEAF (certificate, the CA as its chain, and the key) on SSL, a connection of
// server_context(), before its handshake. The proxy picks LEAF from the SNI it parsed itself, so
// there is no servername callback. SSL keeps its own references; LEAF may go away afterwards.
base::result<void> use_leaf(SSL* ssl, const leaf& value);

// Origin side: TLS 1.2 or newer, the peer's certificate verified against the system trust store
// plus each of EXTRA_CA_FILES (PEM, one or more certificates each), ALPN offering only
// "http/1.1". The error names the file that could not be used and why (for the config's
// inspection.upstream_ca).
base::result<boost::asio::ssl::context> upstream_context(const std::vector<std::string>& extra_ca_files);

// Sets up SSL, a connection of upstream_context(), for HOST before its handshake: a DNS name
// goes into SNI and must match the certificate (no partial wildcards like "f*.example.com"); an
// IPv4/IPv6 literal (brackets allowed) must match an iPAddress SAN and sends no SNI, as RFC 6066
// asks. A certificate for another name then fails the handshake (see verify_failure).
base::result<void> prepare_upstream(SSL* ssl, std::string_view host);

// h2 on an inspected connection, offered to the sandbox only where the origin speaks it: the
// upstream connection offers "h2, http/1.1" (offer_h2, before its handshake, when the
// sandbox's hello offered h2); after it, negotiated_h2 says what the origin chose, and only
// then does allow_h2 let the sandbox-facing connection select h2 too.
base::result<void> offer_h2(SSL* upstream);
void allow_h2(SSL* server);
bool negotiated_h2(const SSL* ssl);

// Why verifying the origin's certificate failed, as short stable text for the decision log
// ("hostname mismatch", "certificate has expired", "self-signed certificate in chain", ...);
// empty when verification did not fail (the handshake failed for another reason, or not at all).
std::string_view verify_failure(const SSL* ssl);

}  // namespace airlock::certs
