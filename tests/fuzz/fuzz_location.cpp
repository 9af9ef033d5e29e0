// libFuzzer target for location_host (a redirect's Location value, from an origin). Besides
// memory safety: a host it returns is never empty and holds none of the delimiters that end an
// authority, and a port is never 0.
#include "proxy/location.hpp"

#include <cstdint>
#include <cstdlib>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const auto target = airlock::proxy::location_host(input);
  if (target) {
    if (target->host.empty() || target->host.find_first_of("/?#@") != std::string::npos) std::abort();
    if (target->port && *target->port == 0) std::abort();
  }
  return 0;
}
