#include "dns/tcp_frames.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <span>
#include <string>

using airlock::dns::next_tcp_frame;
using airlock::dns::tcp_frame;

namespace {

std::span<const std::byte> bytes(const std::string& s) { return std::as_bytes(std::span(s)); }

}  // namespace

TEST_CASE("tcp frames: a whole message, and what follows it left for the next call") {
  const std::string stream = std::string("\x00\x03"
                                         "abc",
                                         5) +
                             std::string("\x00\x01"
                                         "z",
                                         3);
  const auto first = next_tcp_frame(bytes(stream));
  REQUIRE(first.what == tcp_frame::kind::message);
  CHECK(first.consumed == 5);
  CHECK(std::string(reinterpret_cast<const char*>(first.message.data()), first.message.size()) == "abc");
  const auto second = next_tcp_frame(bytes(stream).subspan(first.consumed));
  REQUIRE(second.what == tcp_frame::kind::message);
  CHECK(second.consumed == 3);
  CHECK(second.message.size() == 1);
}

TEST_CASE("tcp frames: a prefix alone, or part of one, needs exactly the rest") {
  CHECK(next_tcp_frame({}).what == tcp_frame::kind::need_more);
  CHECK(next_tcp_frame({}).missing == 2);
  CHECK(next_tcp_frame(bytes(std::string("\x01", 1))).missing == 1);
  const auto partial = next_tcp_frame(bytes(std::string("\x01\x00"
                                                        "ab",
                                                        4)));  // 256 announced, 2 here
  CHECK(partial.what == tcp_frame::kind::need_more);
  CHECK(partial.missing == 254);
  CHECK(partial.consumed == 0);
}

TEST_CASE("tcp frames: length zero is its own kind, and the largest length is read whole") {
  const auto empty = next_tcp_frame(bytes(std::string("\x00\x00\x00\x05", 4)));
  CHECK(empty.what == tcp_frame::kind::empty);
  CHECK(empty.consumed == 2);
  std::string big("\xff\xff", 2);
  big.append(65535, 'x');
  const auto whole = next_tcp_frame(bytes(big));
  REQUIRE(whole.what == tcp_frame::kind::message);
  CHECK(whole.consumed == airlock::dns::max_tcp_frame);
  CHECK(next_tcp_frame(bytes(big).first(big.size() - 1)).missing == 1);
}

TEST_CASE("tcp frame buffer: frames come out whole however the bytes arrive, and a cut one is held") {
  airlock::dns::tcp_frame_buffer frames;
  const std::string stream = std::string("\x00\x02"
                                         "hi"
                                         "\x00\x03"
                                         "abc"
                                         "\x00\x04"
                                         "to",
                                         13);
  std::string got;
  for (const char c : stream) {  // one byte a read: the hardest arrival
    auto room = frames.space();
    REQUIRE(!room.empty());
    room[0] = static_cast<std::byte>(c);
    frames.filled(1);
    for (auto f = frames.next(); f.what == tcp_frame::kind::message; f = frames.next())
      got += std::string(reinterpret_cast<const char*>(f.message.data()), f.message.size()) + "|";
  }
  CHECK(got == "hi|abc|");
  CHECK(frames.holding());  // "\0\4to": two of four bytes
}

TEST_CASE("tcp frame buffer: a largest frame fits after the frames before it are taken") {
  airlock::dns::tcp_frame_buffer frames;
  std::string stream("\x00\x01"
                     "a"
                     "\xff\xff",
                     5);
  stream.append(65535, 'x');
  std::size_t at = 0, messages = 0;
  while (at < stream.size()) {
    auto room = frames.space();
    REQUIRE(!room.empty());
    const auto n = std::min(room.size(), stream.size() - at);
    std::memcpy(room.data(), stream.data() + at, n);
    frames.filled(n);
    at += n;
    for (auto f = frames.next(); f.what == tcp_frame::kind::message; f = frames.next()) ++messages;
  }
  CHECK(messages == 2);
  CHECK(!frames.holding());
}

TEST_CASE("tcp frame buffer: starts small and grows only as a frame needs, to one largest frame") {
  airlock::dns::tcp_frame_buffer frames;
  CHECK(frames.space().size() == airlock::dns::tcp_frame_buffer::initial_size);
  std::size_t most = 0;
  std::string big("\xff\xff", 2);
  big.append(65535, 'x');
  std::size_t at = 0;
  while (at < big.size()) {
    auto room = frames.space();
    most = std::max(most, at + room.size());
    const auto n = std::min(room.size(), big.size() - at);
    std::memcpy(room.data(), big.data() + at, n);
    frames.filled(n);
    at += n;
  }
  CHECK(frames.next().what == tcp_frame::kind::message);
  CHECK(most <= airlock::dns::max_tcp_frame);
}
