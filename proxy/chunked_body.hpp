#pragma once
// Where a chunked message body ends (RFC 9112 7.1): sans-I/O, never throws, fed the body's
// bytes in whatever pieces they arrive. airlock does not decode the body (the bytes go on
// as they came); it only needs to know where the next request head starts, so that every
// head on a connection is judged. As strict as http_head: a chunk line or a chunk's end
// that is not CRLF, a size that is not hex or does not fit 60 bits, control bytes in an
// extension, a chunk line or a trailer section past its cap: each is malformed, the way two
// parsers would disagree on where the body ends.
#include <cstddef>
#include <cstdint>
#include <span>

namespace airlock::proxy {

class chunked_body {
 public:
  // A chunk line (size and extensions) longer than this is refused; so is a trailer
  // section longer than http_head's head cap.
  static constexpr std::size_t max_line = 4096;
  static constexpr std::size_t max_trailers = 64 * 1024;

  struct fed {
    std::size_t used = 0;  // bytes of `bytes` that belong to the body (all of them unless it ended),
                           // or, malformed, those before the first byte that is wrong
    bool malformed = false;
  };

  // Reads on from where the last call stopped. Once done(), feeds use nothing.
  fed feed(std::span<const std::byte> bytes) noexcept;
  bool done() const noexcept { return state_ == state::done; }

 private:
  enum class state : std::uint8_t {
    size,       // chunk-size digits
    extension,  // after the size, up to CR
    line_lf,    // CR of the chunk line seen
    data,       // `left_` bytes of chunk data
    data_cr,    // CRLF after the data
    data_lf,
    trailer,  // at the start of a trailer line (or of the final CRLF)
    trailer_line,
    trailer_lf,  // CR of a trailer line seen
    end_lf,      // CR of the final empty line seen
    done,
    malformed,
  };
  state state_ = state::size;
  bool last_ = false;         // this chunk line said 0: the trailer section follows
  std::uint8_t digits_ = 0;   // of the size
  std::size_t line_ = 0;      // bytes of the current chunk line
  std::size_t trailers_ = 0;  // bytes of the trailer section
  std::uint64_t left_ = 0;    // of the chunk's data, or its size as it is read
};

}  // namespace airlock::proxy
