#pragma once
// DNS over TCP framing (RFC 1035 4.2.2, RFC 7766 8): each message is preceded by its
// length in two bytes. Pure code over bytes a connection has read, so the server's read
// loop and its fuzz target split a stream the same way.
#include <cstddef>
#include <span>
#include <vector>

namespace airlock::dns {

struct tcp_frame {
  enum class kind {
    message,    // `message` is one whole message; `consumed` bytes (prefix and message) are used
    need_more,  // the bytes hold part of a frame (or none); `missing` more complete it
    empty,      // a length of zero: nothing to answer, and nothing a resolver sends
  };
  kind what = kind::need_more;
  std::span<const std::byte> message{};
  std::size_t consumed = 0;
  std::size_t missing = 0;
};

// The largest frame: the two-byte prefix and a message of 65,535 bytes.
inline constexpr std::size_t max_tcp_frame = 2 + 65535;

// The first frame of `buffered`.
tcp_frame next_tcp_frame(std::span<const std::byte> buffered) noexcept;

// A connection's read buffer: bytes go in at space() (then filled()), frames come out of
// next() in order. It starts small (a query is a few dozen bytes) and grows as a frame
// needs, to one largest frame at most, which always fits once the frames before it are
// taken: a connection holds no more than that.
class tcp_frame_buffer {
 public:
  static constexpr std::size_t initial_size = 1024;
  tcp_frame_buffer() : bytes_(initial_size) {}

  // Where to read into; never empty while next() answers need_more.
  std::span<std::byte> space() noexcept;
  void filled(std::size_t n) noexcept { end_ += n; }
  // The next frame; a message's bytes stay valid until the next call to space().
  tcp_frame next() noexcept;
  // Part of a frame is held (a client that stops now stopped in the middle of a query).
  bool holding() const noexcept { return end_ > begin_; }

 private:
  std::vector<std::byte> bytes_;
  std::size_t begin_ = 0, end_ = 0;
};

}  // namespace airlock::dns
