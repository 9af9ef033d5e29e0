#pragma once
// Reads the client's first bytes until they name a host: a TLS ClientHello (SNI) or an
// HTTP/1 request head (Host). Bounded in size and, as a whole, in time: a client that
// dribbles a byte at a time still meets the same absolute deadline.
#include "policy/reason.hpp"

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace airlock::proxy {

struct sniffed {
  enum class kind { tls, http, opaque, unknown };
  kind type = kind::unknown;         // what the bytes are, as far as they went
  std::string name;                  // SNI or Host as sent; empty when none
  std::optional<std::uint16_t> port;  // HTTP: explicit port in Host / absolute-form
  std::string method;                // HTTP: GET, CONNECT...
  bool absolute_form = false;        // HTTP: the target was http://host[:port]/...
  std::size_t head_size = 0;         // HTTP: bytes of the request head (the rest is body)
  bool ech = false;                  // TLS: encrypted_client_hello present (name is the outer SNI)
  bool silent = false;               // opaque: the client sent nothing within the quiet limit
  std::optional<policy::reason> failure;  // set when no name could be read: deny with it
  std::vector<std::byte> bytes;      // everything read; forwarded upstream first
};

// `quiet_limit`: a client that sends nothing at all for that long is waiting for the server
// to speak first (SMTP, MySQL, FTP...): it is opaque TCP, judged by address alone, and
// relayed without waiting out `limit`. Absent: silence ends in `timeout` like a stalled hello.
boost::asio::awaitable<sniffed> sniff(boost::asio::ip::tcp::socket& client, std::chrono::steady_clock::duration limit,
                                      std::optional<std::chrono::steady_clock::duration> quiet_limit = std::nullopt);

// What a list of first bytes says, without I/O (exposed for tests and fuzzing):
// nullopt means "need more bytes".
std::optional<sniffed> classify_first_bytes(std::vector<std::byte>& bytes, bool at_eof);

}  // namespace airlock::proxy
