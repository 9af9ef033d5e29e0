#include "proxy/client_hello.hpp"
#include "proxy/first_message.hpp"
#include "proxy/http_head.hpp"

#include <doctest/doctest.h>

#include <string>
#include <variant>
#include <vector>

using airlock::proxy::first_message_tracker;
namespace client_hello = airlock::proxy::client_hello;
namespace http_head = airlock::proxy::http_head;

namespace {

std::vector<std::byte> bytes_of(const std::string& s) {
  std::vector<std::byte> out;
  for (char c : s) out.push_back(static_cast<std::byte>(c));
  return out;
}

// A minimal ClientHello (no extensions) in one handshake message, split into records of
// `per_record` payload bytes.
std::vector<std::byte> hello_in_records(std::size_t per_record) {
  std::string body = std::string("\x03\x03", 2) + std::string(32, 'r') + std::string("\x00\x00\x02\x13\x01\x01\x00", 7);
  std::string message = std::string("\x01\x00", 2) + static_cast<char>(body.size() >> 8) +
                        static_cast<char>(body.size() & 0xff) + body;
  std::string out;
  for (std::size_t i = 0; i < message.size(); i += per_record) {
    const auto part = message.substr(i, per_record);
    out += std::string("\x16\x03\x01", 3) + static_cast<char>(part.size() >> 8) +
           static_cast<char>(part.size() & 0xff) + part;
  }
  return bytes_of(out);
}

// Feeds `all` one byte at a time, as a dribbling client would; returns how often the
// tracker asked for a full parse and whether it asked at the last byte.
std::pair<int, bool> dribble(const std::vector<std::byte>& all) {
  first_message_tracker t;
  int parses = 0;
  bool last = false;
  for (std::size_t n = 1; n <= all.size(); ++n) {
    last = t.maybe_complete(std::span(all.data(), n));
    parses += last ? 1 : 0;
  }
  return {parses, last};
}

}  // namespace

TEST_CASE("a ClientHello dribbled byte by byte is parsed a logarithmic number of times, and at its end") {
  for (std::size_t per_record : {std::size_t{1000}, std::size_t{7}, std::size_t{1}}) {
    CAPTURE(per_record);
    const auto hello = hello_in_records(per_record);
    REQUIRE(std::holds_alternative<client_hello::found>(client_hello::parse(hello)));
    const auto [parses, at_end] = dribble(hello);
    CHECK(at_end);
    CHECK(parses <= 12);
  }
}

TEST_CASE("an HTTP head dribbled byte by byte is parsed at CRLFCRLF, not per byte") {
  const auto head = bytes_of("GET / HTTP/1.1\r\nHost: example.com\r\nUser-Agent: " + std::string(2000, 'x') +
                             "\r\n\r\n");
  REQUIRE(std::holds_alternative<http_head::request>(http_head::parse(head)));
  const auto [parses, at_end] = dribble(head);
  CHECK(at_end);
  CHECK(parses <= 14);
}

TEST_CASE("bytes that are neither get a full parse on the first read") {
  first_message_tracker t;
  const auto ssh = bytes_of("SSH-2.0-OpenSSH_9.2\r\n");
  CHECK(t.maybe_complete(std::span(ssh.data(), 1)));
}
