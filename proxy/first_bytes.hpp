#pragma once
// What a connection's first bytes are, without I/O: a TLS ClientHello (SNI, ECH), an
// HTTP/1 request head (Host, port, method), something else (opaque TCP), or a failure
// that names the reason. Pure, in the parsers' library, so the judge's fuzz target can
// run the same classification the sniffer runs.
#include "policy/reason.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace airlock::proxy {

struct sniffed {
  enum class kind { tls, http, opaque, unknown };
  kind type = kind::unknown;              // what the bytes are, as far as they went
  std::string name;                       // SNI or Host as sent; empty when none
  std::optional<std::uint16_t> port;      // HTTP: explicit port in Host / absolute-form
  std::string method;                     // HTTP: GET, CONNECT...
  bool absolute_form = false;             // HTTP: the target was http://host[:port]/...
  std::size_t head_size = 0;              // HTTP: bytes of the request head (the rest is body)
  bool ech = false;                       // TLS: encrypted_client_hello present (name is the outer SNI)
  bool offers_h2 = false;                 // TLS: the hello's ALPN offers h2
  bool silent = false;                    // opaque: the client sent nothing within the quiet limit
  std::optional<policy::reason> failure;  // set when no name could be read: deny with it
  std::vector<std::byte> bytes;           // everything read; forwarded upstream first
};

// What a list of first bytes says: nullopt means "need more bytes". Takes the bytes into
// the result.
std::optional<sniffed> classify_first_bytes(std::vector<std::byte>& bytes, bool at_eof);

// A classification that failed for `why` (the sniffer's too_large and timeout too); the
// bytes go with it.
sniffed failed_as(std::vector<std::byte>& bytes, policy::reason why, sniffed::kind as = sniffed::kind::unknown);

}  // namespace airlock::proxy
