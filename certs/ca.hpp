#pragma once

// The local certificate authority behind TLS interception: `airlock ca init` creates it once,
// the proxy loads it at start-up to mint leaf certificates.

#include "base/result.hpp"
#include "certs/openssl_ptr.hpp"

#include <filesystem>
#include <string>

namespace airlock::certs {

// Where init_ca wrote the CA certificate and its private key.
struct ca_files {
  std::filesystem::path cert;
  std::filesystem::path key;
};

// Creates DIR (mode 0700 if new, parents as needed) holding ca.crt (0644) and ca.key (0600,
// unencrypted PEM PKCS#8): a self-signed ECDSA P-256 CA, CN "airlock local CA <random hex>",
// O "airlock", valid for ten years from one hour ago, basicConstraints critical CA:TRUE
// pathlen:0, keyUsage critical keyCertSign+cRLSign, SKI/AKI, random positive 128-bit serial,
// SHA-256 signature.
// Never overwrites an existing ca.key or ca.crt; the modes are exact whatever the umask, and the
// key file is never readable by others, not even briefly. A failed init leaves no ca.key or ca.crt
// behind (a directory it created stays).
// The error is a message for the user that says what to do.
base::result<ca_files> init_ca(const std::filesystem::path& dir);

// The CA certificate and private key, ready to sign leaf certificates.
struct loaded_ca {
  x509_ptr cert;
  evp_pkey_ptr key;
};

// Loads DIR/ca.crt and DIR/ca.key as written by init_ca.
// Refuses a key file that group or others can access (naming the mode found and the chmod to
// run), an encrypted or unparsable key, a key that does not belong to the certificate, and a
// certificate that is not a CA or has expired. The error is a message for the user.
base::result<loaded_ca> load_ca(const std::filesystem::path& dir);

}  // namespace airlock::certs
