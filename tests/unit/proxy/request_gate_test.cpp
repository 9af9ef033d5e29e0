#include "proxy/chunked_body.hpp"
#include "proxy/http_head.hpp"
#include "proxy/request_gate.hpp"

#include <doctest/doctest.h>

#include <string>
#include <string_view>
#include <vector>

namespace {

using airlock::proxy::chunked_body;
using airlock::proxy::request_gate;
namespace hh = airlock::proxy::http_head;

std::span<const std::byte> as_bytes(std::string_view s) { return std::as_bytes(std::span{s.data(), s.size()}); }

hh::request head_of(std::string_view s) {
  const auto r = hh::parse(as_bytes(s));
  REQUIRE(std::holds_alternative<hh::request>(r));
  return std::get<hh::request>(r);
}

// Refuses requests for "other.example" (403) and unframed bytes (400); remembers what it saw.
struct recording_judge final : request_gate::judge {
  std::vector<std::string> hosts;
  std::vector<request_gate::unframed> unframed_seen;
  unsigned request(const hh::request& r, std::uint64_t number) override {
    CHECK(number == hosts.size());
    hosts.push_back(r.host);
    return r.host == "other.example" ? 403 : 0;
  }
  unsigned refuse(request_gate::unframed why, const hh::request*, std::uint64_t) override {
    unframed_seen.push_back(why);
    return 400;
  }
};

// Feeds `input` in pieces of `piece` bytes and returns what went on.
std::string feed(request_gate& gate, std::string_view input, std::size_t piece) {
  std::string out;
  for (std::size_t at = 0; at < input.size(); at += piece) {
    const auto admitted = gate.admit(as_bytes(input.substr(at, piece)));
    out.append(reinterpret_cast<const char*>(admitted.data()), admitted.size());
    gate.passed();
  }
  return out;
}

// The same outcome whatever the reads: every size of piece from 1 byte to all of it.
void for_every_piece_size(std::string_view input, const std::string& passes, std::uint64_t requests, unsigned refused) {
  for (std::size_t piece = 1; piece <= input.size(); ++piece) {
    INFO("pieces of " << piece);
    recording_judge j;
    request_gate gate(j);
    CHECK(feed(gate, input, piece) == passes);
    CHECK(gate.requests() == requests);
    CHECK(gate.refused() == refused);
  }
}

constexpr std::string_view get_a = "GET / HTTP/1.1\r\nHost: a.example\r\n\r\n";
constexpr std::string_view get_other = "GET / HTTP/1.1\r\nHost: other.example\r\n\r\n";

}  // namespace

TEST_CASE("http_head reads how a request's body is framed") {
  CHECK(head_of(get_a).body == hh::body::none);
  auto r = head_of("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 12\r\n\r\n");
  CHECK(r.body == hh::body::length);
  CHECK(r.content_length == 12);
  CHECK(head_of("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n").body == hh::body::chunked);
  CHECK(head_of("GET / HTTP/1.1\r\nHost: a\r\nUpgrade: websocket\r\n\r\n").upgrade == "websocket");
  // Each a way for two parsers to disagree on where the body ends.
  for (const auto* ambiguous : {
           "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\n",
           "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3, 3\r\n\r\n",
           "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: +3\r\n\r\n",
           "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1234567890123456789\r\n\r\n",
           "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n",
           "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
           "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n",
           "POST / HTTP/1.0\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n",
       }) {
    INFO(ambiguous);
    CHECK(head_of(ambiguous).body == hh::body::ambiguous);
  }
}

TEST_CASE("chunked_body finds the end of a chunked body, however it is split") {
  const std::string body = "5\r\nhello\r\n1a;name=\"v\"\r\nabcdefghijklmnopqrstuvwxyz\r\n0\r\nTrailer: x\r\n\r\n";
  const std::string after = "GET /";
  const std::string all = body + after;
  for (std::size_t piece = 1; piece <= all.size(); ++piece) {
    INFO("pieces of " << piece);
    chunked_body c;
    std::size_t used = 0;
    for (std::size_t at = 0; at < all.size() && !c.done(); at += piece) {
      const auto fed = c.feed(as_bytes(std::string_view(all).substr(at, piece)));
      REQUIRE_FALSE(fed.malformed);
      used += fed.used;
    }
    CHECK(c.done());
    CHECK(used == body.size());
  }
}

TEST_CASE("chunked_body refuses what parsers may read differently") {
  for (const auto* bad : {"x\r\n", "\r\n", "5\nhello\r\n", "5\r\nhelloXX", "5\r\nhello\r0", "0\r\n folded\r\n\r\n",
                          "1000000000000000\r\n", "0\r\n\r\r", "5;ext\x01\r\n"}) {
    INFO(bad);
    chunked_body c;
    CHECK(c.feed(as_bytes(bad)).malformed);
  }
  chunked_body long_line;
  CHECK(long_line.feed(as_bytes("5;" + std::string(chunked_body::max_line, 'a'))).malformed);
}

TEST_CASE("request_gate lets whole requests through, judged one by one") {
  const std::string two = std::string(get_a) + "POST /x HTTP/1.1\r\nHost: a.example\r\nContent-Length: 4\r\n\r\nbody";
  for_every_piece_size(two, two, 2, 0);
  const std::string chunked = std::string("POST / HTTP/1.1\r\nHost: a.example\r\nTransfer-Encoding: chunked\r\n\r\n") +
                              "3\r\nGET\r\n0\r\n\r\n" + std::string(get_a);
  for_every_piece_size(chunked, chunked, 2, 0);
}

TEST_CASE("request_gate holds a head back until it is judged, and nothing after a refused one goes on") {
  // A body that looks like a head for the other host is only a body.
  const std::string smuggled_in_body = "POST / HTTP/1.1\r\nHost: a.example\r\nContent-Length: " +
                                       std::to_string(get_other.size()) + "\r\n\r\n" + std::string(get_other);
  for_every_piece_size(smuggled_in_body, smuggled_in_body, 1, 0);
  // A kept-alive or pipelined request for another host: refused, and what follows it too.
  const std::string pipelined = std::string(get_a) + std::string(get_other) + std::string(get_a);
  for_every_piece_size(pipelined, std::string(get_a), 1, 403);

  recording_judge j;
  request_gate gate(j);
  const auto half = get_a.substr(0, 20);
  CHECK(gate.admit(as_bytes(half)).empty());  // not yet judged: nothing goes on
  CHECK(gate.mid_request());
  CHECK(j.hosts.empty());
  gate.passed();
  CHECK(gate.admit(as_bytes(get_a.substr(20))).size() == get_a.size());
  gate.passed();
  CHECK_FALSE(gate.mid_request());
  CHECK(j.hosts == std::vector<std::string>{"a.example"});
}

TEST_CASE("request_gate refuses bytes it cannot frame, after the requests before them") {
  const std::string ambiguous =
      std::string(get_a) + "POST / HTTP/1.1\r\nHost: a.example\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab";
  for_every_piece_size(ambiguous, std::string(get_a), 1, 400);
  const std::string bad_chunk =
      std::string("POST / HTTP/1.1\r\nHost: a.example\r\nTransfer-Encoding: chunked\r\n\r\n") + "zz\r\n";
  // The body's bytes before the first wrong one pass as they come, however they are split.
  for_every_piece_size(bad_chunk, bad_chunk.substr(0, bad_chunk.size() - 4), 1, 400);
  const std::string late_bad_chunk = bad_chunk.substr(0, bad_chunk.size() - 4) + "3\r\nabcX";
  for_every_piece_size(late_bad_chunk, late_bad_chunk.substr(0, late_bad_chunk.size() - 1), 1, 400);
  for_every_piece_size(std::string(get_a) + "SSH-2.0-OpenSSH_9.2\r\n", std::string(get_a), 1, 400);

  recording_judge j;
  request_gate gate(j);
  const std::string huge = "GET / HTTP/1.1\r\nHost: a.example\r\nX: " + std::string(hh::default_max_size, 'a');
  CHECK(feed(gate, huge, 4096).empty());
  CHECK(gate.refused() == 400);
  REQUIRE(j.unframed_seen.size() == 1);
  CHECK(j.unframed_seen[0] == request_gate::unframed::head_too_large);
}
