// libFuzzer target for attribution::proc::parse_cmdline: the line is printable ASCII, at most
// max_cmdline bytes, and a short plain argv comes back exactly (NULs as spaces).
#include "attribution/proc_parse.hpp"

#include <cstdint>
#include <cstdlib>
#include <span>
#include <string>
#include <string_view>

namespace proc = airlock::attribution::proc;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto bytes = std::as_bytes(std::span(data, size));
  const std::string line = proc::parse_cmdline(bytes);
  if (line.size() > proc::max_cmdline) std::abort();
  for (char c : line)
    if (c < 0x20 || c > 0x7e) std::abort();

  std::string_view raw(reinterpret_cast<const char*>(data), size);
  while (!raw.empty() && raw.back() == '\0') raw.remove_suffix(1);
  bool plain = raw.size() <= proc::max_cmdline;
  std::string want;
  for (char c : raw) {
    if (c == '\0') c = ' ';
    if (c < 0x20 || c > 0x7e || c == '\\') plain = false;
    want += c;
  }
  if (plain && line != want) std::abort();
  // Text longer than the cap is always cut, and a cut line says so.
  if (raw.size() > proc::max_cmdline && !line.ends_with("...")) std::abort();
  return 0;
}
