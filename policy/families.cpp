#include "policy/families.hpp"

#include "policy/embedded_file.hpp"
#include "policy/rule_yaml.hpp"

namespace airlock::policy {
namespace generated {
std::span<const airlock::embedded_file> family_files();
}

std::vector<std::string_view> family_names() {
  std::vector<std::string_view> out;
  for (const auto& f : generated::family_files()) out.push_back(f.name);
  return out;
}

boost::system::result<family, std::vector<config_error>> load_family(std::string_view name) {
  using failure = std::vector<config_error>;
  for (const auto& f : generated::family_files()) {
    if (f.name != name) continue;
    detail::yaml_reader r("<family " + std::string(name) + ">");
    YAML::Node root;
    try {
      root = YAML::Load(std::string(f.text));
    } catch (const YAML::Exception& e) {
      return failure{{{r.file(), e.mark.line + 1, e.mark.column + 1}, "YAML syntax: " + e.msg}};
    }
    family out;
    out.name = std::string(name);
    if (!root.IsMap()) return failure{{{r.file(), 1, 1}, "a family file is a mapping"}};
    r.check_keys(root, {"family", "version", "description", "allow", "deny"}, "the family");
    if (detail::yaml_reader::scalar_text(root["family"]) != name)
      r.error(root["family"], "family: must be '" + std::string(name) + "', the file's name");
    try {
      out.version = root["version"].as<int>();
    } catch (const YAML::Exception&) {
      r.error(root["version"], "version: expected a number");
    }
    if (auto d = root["description"]) out.description = detail::yaml_reader::scalar_text(d);
    if (auto a = root["allow"]) out.allow = detail::parse_rules(r, a, "allow", {false, true});
    if (auto d = root["deny"]) out.deny = detail::parse_rules(r, d, "deny", {true, true});
    if (!r.errors().empty()) return r.errors();
    return out;
  }
  std::string message = "unknown service family '" + std::string(name) + "'";
  const auto names = family_names();
  if (auto best = detail::did_you_mean(name, names); !best.empty())
    message += "; did you mean '" + std::string(best) + "'?";
  std::string known;
  for (auto n : names) known += (known.empty() ? "" : ", ") + std::string(n);
  message += " (shipped: " + known + ")";
  return failure{{{"", 0, 0}, message}};
}

}  // namespace airlock::policy
