#include "policy/rule_index.hpp"

#include "policy/rule_yaml.hpp"

#include <re2/re2.h>
#include <re2/set.h>

#include <algorithm>

namespace airlock::policy {

struct rule_index::regex_set {
  static RE2::Options options() {
    RE2::Options o;
    o.set_case_sensitive(false);
    o.set_log_errors(false);
    return o;
  }
  RE2::Set set{options(), RE2::ANCHOR_BOTH};
};

rule_index::rule_index() = default;
rule_index::~rule_index() = default;
rule_index::rule_index(rule_index&&) noexcept = default;
rule_index& rule_index::operator=(rule_index&&) noexcept = default;

std::optional<std::string> rule_index::build(const std::vector<rule_config>& rules) {
  // Sparse buckets: most lookups are for suffixes no rule has, and an empty bucket answers
  // with one memory access instead of a walk through a chain of nodes.
  exact_.max_load_factor(0.25f);
  wildcard_.max_load_factor(0.25f);
  for (const auto& r : rules) {
    const auto index = static_cast<std::uint32_t>(rules_.size());
    rules_.push_back({r.ports, r.mark.to_string(), r.network, r.inspect, r.paths, r.methods, r.protocols, r.own});
    switch (r.type) {
      case rule_config::kind::host: exact_[r.pattern].push_back(index); break;
      case rule_config::kind::wildcard:
        wildcard_[r.pattern].push_back(index);
        wildcard_lengths_ |= label_bit(static_cast<unsigned>(std::count(r.pattern.begin(), r.pattern.end(), '.')) + 1);
        break;
      case rule_config::kind::cidr: cidrs_.push_back(index); break;
      case rule_config::kind::regex:
        if (!regexes_) regexes_ = std::make_unique<regex_set>();
        // The loader compiled each pattern alone with the same options, so this only
        // fails on a bug; fail the whole compile rather than drop a deny rule.
        if (regexes_->set.Add(r.pattern, nullptr) < 0)
          return r.mark.to_string() + ": regex '" + r.pattern + "' did not compile";
        regex_rules_.push_back(index);
        break;
    }
  }
  if (regexes_ && !regexes_->set.Compile())
    return "the " + std::to_string(regex_rules_.size()) +
           " regexes of one rule list exceed RE2's memory budget; use fewer or simpler regexes";
  return std::nullopt;
}

void rule_index::regex_matches(std::string_view name, std::vector<int>& out) const {
  out.clear();
  if (!regexes_) return;
  regexes_->set.Match(re2::StringPiece(name.data(), name.size()), &out);
  std::sort(out.begin(), out.end());
}

}  // namespace airlock::policy
