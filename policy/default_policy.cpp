// The policy `airlock daemon` uses with no -c: deploy/default-policy.yaml, compiled in.
#include "policy/config.hpp"
#include "policy/embedded_file.hpp"

namespace airlock::policy {
namespace generated {
std::span<const airlock::embedded_file> default_policy_files();
}

std::string_view default_config_text() noexcept { return generated::default_policy_files().front().text; }

config_result load_default_config() {
  return load_config_text(default_config_text(), std::string(default_config_label));
}

}  // namespace airlock::policy
