// libFuzzer target for attribution::proc::parse_stat: any bytes either fail with a reason or
// give a positive pid, a non-negative ppid and a printable, bounded comm.
#include "attribution/proc_parse.hpp"

#include <cstdint>
#include <cstdlib>
#include <span>

namespace proc = airlock::attribution::proc;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto bytes = std::as_bytes(std::span(data, size));
  const auto s = proc::parse_stat(bytes);
  if (!s) return 0;
  if (s->pid <= 0 || s->ppid < 0 || s->comm.size() > proc::max_comm) std::abort();
  for (char c : s->comm)
    if (c < 0x20 || c > 0x7e) std::abort();
  return 0;
}
