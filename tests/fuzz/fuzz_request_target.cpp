// libFuzzer target for classify_target and path_under (request targets come from sandboxes).
// Besides memory safety: a plain target's path is a prefix of the target that starts with '/',
// holds no '?', and lies under "/" and under itself; a path under a prefix is never shorter
// than the prefix's decoded form could be (checked loosely: under "/" always).
#include "policy/request_target.hpp"

#include <cstdint>
#include <cstdlib>
#include <string_view>

namespace pol = airlock::policy;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const auto t = pol::classify_target(input);
  if (t.shape == pol::target_shape::plain) {
    if (t.path.empty() || t.path.front() != '/' || t.path.find('?') != std::string_view::npos) std::abort();
    if (input.substr(0, t.path.size()) != t.path) std::abort();
    if (!pol::path_under(t.path, "/")) std::abort();
    if (!pol::path_under(t.path, t.path) && t.path.find('%') == std::string_view::npos) std::abort();
  }
  // Any split of the input as (path, prefix) must not crash.
  const std::size_t cut = size == 0 ? 0 : data[0] % (size + 1);
  (void)pol::path_under(input.substr(0, cut), input.substr(cut));
  return 0;
}
