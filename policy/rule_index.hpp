#pragma once
// One list of rules (a policy's allow or deny list, or an operator floor) indexed for
// lookup: exact names in a hash map, "*.suffix" wildcards by suffix, regexes in one
// RE2::Set, address prefixes in a list. Built once, then read-only.
#include "policy/config.hpp"

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace re2 {
class RE2;
}

namespace airlock::policy {

// Port 0 in a query means "on any port": DNS asks whether a name is reachable at all.
inline constexpr std::uint16_t any_port = 0;

struct compiled_rule {
  std::vector<std::uint16_t> ports;  // empty: every port
  std::string origin;                // "FILE:LINE"
  std::optional<cidr> network;
  bool inspect = false;
  std::vector<std::string> paths;              // inspected requests: decoded path prefixes; empty = any path
  std::vector<std::string> methods;            // inspected requests: sorted tokens; empty = any method
  std::vector<port_protocol_entry> protocols;  // written out; other ports speak their default
  bool own = false;  // a cidr rule that may reach airlock's own addresses (policy/own_addresses.hpp)

  bool covers(std::uint16_t port) const noexcept {
    return port == any_port || ports.empty() || std::binary_search(ports.begin(), ports.end(), port);
  }
  port_protocol protocol_on(std::uint16_t port) const noexcept {
    for (const auto& e : protocols)
      if (e.port == port) return e.protocol;
    return default_protocol(port);
  }
  // What `w` may be spoken on `port` under this rule (a covered port; DNS asks unjudged).
  bool speaks(std::uint16_t port, wire w) const noexcept { return w == wire::unjudged || admits(protocol_on(port), w); }
  bool admits_method(std::string_view method) const noexcept {
    return methods.empty() || std::find(methods.begin(), methods.end(), method) != methods.end();
  }
};

class rule_index {
 public:
  rule_index();
  ~rule_index();
  rule_index(rule_index&&) noexcept;
  rule_index& operator=(rule_index&&) noexcept;

  // Adds the rules (validated by the loader) and builds the regex set; an error (the
  // regex set does not fit RE2's budget) fails the whole compile, never a silent gap.
  std::optional<std::string> build(const std::vector<rule_config>& rules);

  // Calls fn(rule) for each rule whose name pattern matches canonical `name`: exact first,
  // then wildcards from the longest suffix, then regexes. Cost grows with the labels of
  // the name (one hash lookup per label) and the regex automaton, not with the rule count.
  template <typename Fn>
  void for_each_name_match(std::string_view name, Fn&& fn) const;
  // Calls fn(rule) for each cidr rule containing `a`.
  template <typename Fn>
  void for_each_address_match(const boost::asio::ip::address& a, Fn&& fn) const;

  std::size_t size() const noexcept { return rules_.size(); }

 private:
  struct string_hash {
    using is_transparent = void;
    // Deliberately not noexcept: libstdc++ then stores each node's hash, so a probe that
    // walks a bucket compares hashes instead of re-hashing keys (a cache miss each on a
    // large index; bench/results/2026-12-02-policy-decide.md measured it at 100,000 rules).
    std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  using name_map = std::unordered_map<std::string, std::vector<std::uint32_t>, string_hash, std::equal_to<>>;
  // Indices (into rules_) of the regex rules matching `name`, in rule order.
  void regex_matches(std::string_view name, std::vector<int>& out) const;

  static constexpr std::uint64_t label_bit(unsigned labels) noexcept {
    return std::uint64_t{1} << (labels < 63 ? labels : 63);
  }

  std::vector<compiled_rule> rules_;
  name_map exact_;
  name_map wildcard_;
  std::uint64_t wildcard_lengths_ = 0;  // bit n: some wildcard suffix has n labels (63: 63 or more)
  std::vector<std::uint32_t> cidrs_;
  std::vector<std::uint32_t> regex_rules_;  // RE2::Set pattern index -> rule index
  struct regex_set;
  std::unique_ptr<regex_set> regexes_;
};

template <typename Fn>
void rule_index::for_each_name_match(std::string_view name, Fn&& fn) const {
  if (!exact_.empty())
    if (auto it = exact_.find(name); it != exact_.end())
      for (auto i : it->second) fn(rules_[i]);
  if (!wildcard_.empty()) {
    // Only suffixes with as many labels as some "*.suffix" rule has are looked up: a deep
    // name costs one lookup per distinct suffix length in the list, not one per label.
    auto labels = static_cast<unsigned>(std::count(name.begin(), name.end(), '.')) + 1;
    for (auto dot = name.find('.'); dot != std::string_view::npos; dot = name.find('.', dot + 1)) {
      --labels;  // labels in the suffix after this dot
      if (!(wildcard_lengths_ & label_bit(labels))) continue;
      if (auto it = wildcard_.find(name.substr(dot + 1)); it != wildcard_.end())
        for (auto i : it->second) fn(rules_[i]);
    }
  }
  if (!regex_rules_.empty()) {
    // One per thread: the data path never allocates for a regex match.
    thread_local std::vector<int> hits;
    regex_matches(name, hits);
    for (int h : hits) fn(rules_[regex_rules_[static_cast<std::size_t>(h)]]);
  }
}

template <typename Fn>
void rule_index::for_each_address_match(const boost::asio::ip::address& a, Fn&& fn) const {
  for (auto i : cidrs_)
    if (rules_[i].network->contains(a)) fn(rules_[i]);
}

}  // namespace airlock::policy
