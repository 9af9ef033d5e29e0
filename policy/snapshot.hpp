#pragma once
// The compiled, immutable policy. Built once per (re)load by snapshot::compile(); the
// data path only reads it, through a shared_ptr taken at the start of each connection
// or query, so a reload never changes a decision half-way.
#include "policy/config.hpp"
#include "policy/domain_name.hpp"
#include "policy/reason.hpp"

#include <boost/asio/ip/address.hpp>

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace airlock::policy {

// What decided, and why. `rule` points into the snapshot ("FILE:LINE" or "default"):
// keep the snapshot alive while the decision is used.
struct decision {
  policy::verdict verdict = verdict::deny;
  policy::reason reason = reason::internal_error;
  std::string_view rule = "default";

  bool allowed() const noexcept { return verdict != verdict::deny; }
};

// Port 0 in a query means "on any port": DNS asks whether a name is reachable at all.
inline constexpr std::uint16_t any_port = 0;

class compiled_policy {
 public:
  compiled_policy(const policy_config& cfg);

  // Decides a connection (or, with any_port, a DNS query) to `name`.
  decision decide(const domain_name& name, std::uint16_t port) const noexcept;
  // Decides a connection to a bare address (no name): only cidr rules can allow it.
  decision decide(const boost::asio::ip::address& address, std::uint16_t port) const noexcept;
  // Whether a cidr allow rule covers this special address on this port (the one way to
  // reach a private range on purpose).
  const std::string* cidr_allowance(const boost::asio::ip::address& address, std::uint16_t port) const noexcept;

  const std::string& name() const noexcept { return name_; }
  policy_mode mode() const noexcept { return mode_; }

 private:
  struct rule {
    std::vector<std::uint16_t> ports;  // empty: every port
    std::string origin;                // "FILE:LINE"
    std::optional<cidr> network;
    bool covers(std::uint16_t port) const noexcept;
  };
  struct string_hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
  };
  using name_index = std::unordered_map<std::string, std::vector<std::uint32_t>, string_hash, std::equal_to<>>;
  struct rule_set {
    std::vector<rule> rules;
    name_index exact;     // name -> rules
    name_index wildcard;  // suffix -> rules for "*.suffix"
    std::vector<std::uint32_t> cidrs;
    void add(const rule_config& r);
    // Calls fn(rule) for each rule whose name pattern matches, exact first.
    template <typename Fn> void for_each_match(std::string_view name, Fn&& fn) const;
  };
  decision finish(decision d) const noexcept;

  std::string name_;
  policy_mode mode_;
  rule_set allow_;
  rule_set deny_;
};

class snapshot {
 public:
  // Compiles a validated configuration; everything it needs was checked by the loader.
  static std::shared_ptr<const snapshot> compile(const config& cfg);

  struct session {
    std::string_view id;
    const compiled_policy* policy;
  };
  // The session a source address belongs to: longest configured prefix, then the default
  // policy; nullopt when neither applies (the caller denies with reason no_session).
  std::optional<session> session_for(const boost::asio::ip::address& source) const noexcept;

  const compiled_policy* find_policy(std::string_view name) const noexcept;
  // A content hash of everything that can change a decision; decisions log it.
  const std::string& version() const noexcept { return version_; }
  std::size_t rule_count() const noexcept { return rule_count_; }
  std::size_t policy_count() const noexcept { return policies_.size(); }
  std::size_t session_count() const noexcept { return bindings_.size(); }

 private:
  struct binding {
    cidr source;
    std::string id;
    const compiled_policy* policy;
  };
  std::vector<std::unique_ptr<compiled_policy>> policies_;
  std::vector<binding> bindings_;  // longest prefix first
  const compiled_policy* default_policy_ = nullptr;
  std::string version_;
  std::size_t rule_count_ = 0;
};

}  // namespace airlock::policy
