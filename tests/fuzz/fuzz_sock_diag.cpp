// libFuzzer target for attribution::sock_diag::parse_reply: any datagram is parsed or refused
// without reading outside it, and what it yields is consistent. The first four bytes choose the
// sequence number the caller expects, so seq matching is exercised too.
#include "attribution/sock_diag.hpp"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <span>

namespace sd = airlock::attribution::sock_diag;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::uint32_t seq = 0;
  if (size >= sizeof seq) {
    std::memcpy(&seq, data, sizeof seq);
    data += sizeof seq;
    size -= sizeof seq;
  }
  const auto datagram = std::as_bytes(std::span(data, size));
  const auto r = sd::parse_reply(datagram, seq);
  if (!r) return 0;
  // Each entry came from a message of 16 + 72 bytes at least.
  if (r->sockets.size() * 88 > size) std::abort();
  for (const auto& s : r->sockets) {
    if (s.local_address.is_v6() != s.v6 || s.remote_address.is_v6() != s.v6) std::abort();
  }
  if (r->error < 0) std::abort();
  if (r->error != 0 && !r->done) std::abort();
  return 0;
}
