// HTTP/1.x request head (RFC 9112 2-3, RFC 9110 7.2): sans-I/O, pure, never throws.
//
// The proxy needs one thing from a plain-HTTP client: which host it wants. The parser reads the
// request line and the header block up to the blank line and derives that host from the Host
// header, the absolute-form target or the CONNECT authority. It is deliberately stricter than a
// server: bare LF, obs-fold, whitespace before a colon, a repeated Host and a Host that disagrees
// with the target are all refused, because each is a way to make two parsers see different hosts.
// The caller owns the socket, the buffer, the deadline and the policy; names are canonicalised in
// policy::domain_name, so `host` is returned exactly as sent.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>

namespace airlock::proxy::http_head {

inline constexpr std::size_t default_max_size = 64 * 1024;

// Longer runs of capitals are not a method we will ever forward (the longest registered is 17).
inline constexpr std::size_t max_method_size = 32;

// How a request's body ends (RFC 9112 6): a request without Content-Length or
// Transfer-Encoding has none. `ambiguous` is anything two parsers may frame differently
// (request smuggling): Transfer-Encoding other than exactly one "chunked" on HTTP/1.1
// without Content-Length, more than one Content-Length, or one that is not a number.
enum class body { none, length, chunked, ambiguous };

struct request {
  std::string method;  // e.g. GET, CONNECT
  std::string target;  // request-target as sent
  std::string host;    // from Host, or from the absolute-form/authority-form target; without port, without [] for IPv6
  std::optional<std::uint16_t> port;  // explicit port when one was given
  bool absolute_form = false;         // target was http://host[:port]/...
  std::size_t head_size = 0;          // bytes up to and including the blank line
  http_head::body body = http_head::body::none;
  std::uint64_t content_length = 0;  // body::length: its bytes
  std::string upgrade;               // the Upgrade header's value, as sent (empty: none)
};
struct need_more {};  // a prefix of a request head: read more and call again with everything so far
struct not_http {};   // does not start like an HTTP/1.x request line
enum class error { malformed, too_large, missing_host, conflicting_host };
struct failed {
  error why;
};
using result = std::variant<need_more, not_http, failed, request>;

// Parses the client's first bytes. `bytes` is everything read so far (the caller buffers).
// A head (request line, headers, blank line) longer than `max_size` fails with too_large as soon as
// `max_size` bytes have arrived without its end. Bytes after the head (a body) are not looked at.
result parse(std::span<const std::byte> bytes, std::size_t max_size = default_max_size) noexcept;

// The origin-form target a request asks its server for: the target itself, or for an
// absolute-form one ("http://h/x?q") what follows its authority, which ends at the first
// '/', '?' or '#' ("http://h?/v1/" asks for "/" with the query "?/v1/", never for "/v1/").
std::string origin_target(std::string_view target, bool absolute_form);

// A parsed head (`head_size` bytes that parse() accepted) as an explicit proxy forwards it:
// hop-by-hop and proxy headers dropped (Connection, Keep-Alive, Proxy-Connection,
// Proxy-Authorization, TE, Trailer, Upgrade) and `Connection: close` added, so one
// upstream connection carries one request and the next request, maybe for another host,
// comes on a new connection that is judged again.
std::string forward_head(std::span<const std::byte> head);

}  // namespace airlock::proxy::http_head
