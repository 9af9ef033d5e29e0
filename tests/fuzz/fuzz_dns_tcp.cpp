// libFuzzer target for DNS over TCP framing (dns/tcp_frames.hpp): the input after its first
// byte is a connection's byte stream, fed to a tcp_frame_buffer in reads whose sizes the first
// byte picks. The messages that come out must be exactly those next_tcp_frame finds in the
// whole stream, in order; a zero length ends both; what is left held must agree; and each
// message goes through the query parser the server hands it to.
#include "dns/tcp_frames.hpp"
#include "dns/wire.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <span>
#include <string>
#include <vector>

namespace dns = airlock::dns;

namespace {

void require(bool holds) {
  if (!holds) std::abort();
}

std::string text(std::span<const std::byte> b) { return {reinterpret_cast<const char*>(b.data()), b.size()}; }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const unsigned seed = data[0];
  const std::span<const std::byte> stream{reinterpret_cast<const std::byte*>(data + 1), size - 1};

  // The reference: frames of the whole stream at once.
  std::vector<std::string> want;
  bool want_empty = false;
  std::size_t at = 0;
  for (;;) {
    const auto f = dns::next_tcp_frame(stream.subspan(at));
    if (f.what == dns::tcp_frame::kind::need_more) {
      require(f.missing > 0 && f.consumed == 0);
      break;
    }
    if (f.what == dns::tcp_frame::kind::empty) {
      want_empty = true;
      break;
    }
    require(f.consumed == f.message.size() + 2 && !f.message.empty());
    want.push_back(text(f.message));
    (void)dns::wire::parse_query(f.message);
    at += f.consumed;
  }
  const bool want_held = !want_empty && at < stream.size();

  // The server's way: reads of 1 to 256 bytes (or as much as fits), frames taken after each.
  dns::tcp_frame_buffer frames;
  std::vector<std::string> got;
  bool got_empty = false;
  std::size_t fed = 0, read = 0;
  while (fed < stream.size() && !got_empty) {
    auto room = frames.space();
    require(!room.empty());
    const std::size_t chunk = seed == 0 ? room.size() : 1 + (seed * 31 + read * 17) % 256;
    const std::size_t n = std::min({room.size(), chunk, stream.size() - fed});
    std::memcpy(room.data(), stream.data() + fed, n);
    frames.filled(n);
    fed += n;
    ++read;
    for (;;) {
      const auto f = frames.next();
      if (f.what == dns::tcp_frame::kind::empty) got_empty = true;
      if (f.what != dns::tcp_frame::kind::message) break;
      got.push_back(text(f.message));
    }
  }
  require(got == want);
  require(got_empty == want_empty);
  if (!want_empty) require(frames.holding() == want_held);
  return 0;
}
