// TLS ClientHello peek (RFC 8446 4.1.2, RFC 6066 3, RFC 7301 3.1): sans-I/O, pure, never throws.
//
// The proxy reads the client's first bytes without answering, so it must decide on the hello alone:
// the server name, the ALPN list and whether ECH hides the real name. The parser reassembles the
// hello across TLS records and TCP reads, checks every length against its enclosing length, and
// rejects anything ambiguous (two names, two server_name extensions) instead of guessing. It never
// reads outside the span and allocates at most about `max_size` bytes. The caller owns the socket,
// the buffer, the deadline and the policy; name validation happens in policy::domain_name.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <variant>
#include <vector>

namespace airlock::proxy::client_hello {

inline constexpr std::size_t default_max_size = 16 * 1024;  // cap on the ClientHello handshake message

// Largest TLSPlaintext fragment (RFC 8446 5.1); a bigger record is malformed, not merely large.
inline constexpr std::size_t max_record_size = 16 * 1024;
inline constexpr std::size_t record_header_size = 5;

inline constexpr std::uint16_t extension_server_name = 0;
inline constexpr std::uint16_t extension_alpn = 16;
inline constexpr std::uint16_t extension_ech = 0xfe0d;

struct found {
  std::string sni;  // raw host_name bytes as sent (validation happens elsewhere); empty when none
  bool has_sni = false;
  std::vector<std::string> alpn;  // protocol names in order
  bool ech = false;               // encrypted_client_hello extension (0xfe0d) present: sni is the OUTER name
  std::size_t consumed = 0;       // bytes of the input that made up the TLS records holding the hello
};
struct need_more {};  // a prefix of a valid hello: read more and call again with everything so far
struct not_tls {};    // first bytes are not a TLS handshake record
enum class error { malformed, too_large };
struct failed {
  error why;
};
using result = std::variant<need_more, not_tls, failed, found>;

// Parses the client's first bytes. `bytes` is everything read so far (the caller buffers).
// `max_size` caps the handshake body length; a larger declared length fails before its bytes arrive.
result parse(std::span<const std::byte> bytes, std::size_t max_size = default_max_size) noexcept;

}  // namespace airlock::proxy::client_hello
