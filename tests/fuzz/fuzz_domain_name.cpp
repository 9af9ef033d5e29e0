// libFuzzer target for policy::domain_name: any bytes either fail with a reason or give a
// canonical name that is stable (parsing it again gives itself) and within the limits.
#include "policy/domain_name.hpp"

#include <cstdint>
#include <cstdlib>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto name = airlock::policy::domain_name::parse(text);
  if (!name.has_value()) return 0;
  const auto& s = name->str();
  if (s.empty() || s.size() > 253 || s.back() == '.') std::abort();
  for (char c : s)
    if (c >= 'A' && c <= 'Z') std::abort();
  auto again = airlock::policy::domain_name::parse(s);
  if (!again.has_value() || again->str() != s) std::abort();
  return 0;
}
