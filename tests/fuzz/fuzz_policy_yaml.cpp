// libFuzzer target for the policy loader: any text either loads (and then compiles and
// decides without trouble) or returns errors that each carry a position.
#include "policy/config.hpp"
#include "policy/snapshot.hpp"

#include <cstdint>
#include <cstdlib>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size > 16384) return 0;  // yaml-cpp recursion on deep nesting is not what we test here
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto cfg = airlock::policy::load_config_text(text, "fuzz.yaml");
  if (!cfg.has_value()) {
    if (cfg.error().empty()) std::abort();
    for (const auto& e : cfg.error())
      if (e.mark.file != "fuzz.yaml" || e.message.empty()) std::abort();
    return 0;
  }
  auto compiled = airlock::policy::snapshot::compile(*cfg);
  if (!compiled.has_value()) return 0;  // a regex set over RE2's budget: reported, not a crash
  const auto& snap = *compiled;
  auto name = airlock::policy::domain_name::parse("a.example.com");
  for (const auto& p : cfg->policies) {
    const auto* policy = snap->find_policy(p.name);
    if (!policy) std::abort();
    (void)policy->decide(*name, 443);
  }
  return 0;
}
