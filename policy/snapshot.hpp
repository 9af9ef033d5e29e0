#pragma once
// The compiled, immutable policy. Built once per (re)load by snapshot::compile(); the
// data path only reads it, through a shared_ptr taken at the start of each connection
// or query, so a reload never changes a decision half-way.
#include "policy/config.hpp"
#include "policy/domain_name.hpp"
#include "policy/reason.hpp"
#include "policy/rule_index.hpp"
#include "policy/session_table.hpp"

#include <boost/asio/ip/address.hpp>
#include <boost/system/result.hpp>

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace airlock::policy {

// What decided, and why. `rule` points into the snapshot ("FILE:LINE" or "default"):
// keep the snapshot alive while the decision is used.
struct decision {
  policy::verdict verdict = verdict::deny;
  policy::reason reason = reason::internal_error;
  std::string_view rule = "default";
  bool inspect = false;  // the allowing rule asks for TLS inspection

  bool allowed() const noexcept { return verdict != verdict::deny; }
};

// The operator floors, shared by every policy of a snapshot.
struct floors {
  rule_index deny;   // always_deny: beats everything, audit mode included
  rule_index allow;  // always_allow: beats a policy's own rules
};

class compiled_policy {
 public:
  compiled_policy(std::string name, policy_mode mode, std::shared_ptr<const floors> floor);
  std::optional<std::string> build(const policy_config& cfg);

  // Decides a connection (or, with any_port, a DNS query) to `name`.
  decision decide(const domain_name& name, std::uint16_t port) const noexcept;
  // Decides a connection to a bare address (no name): only cidr rules can allow it.
  decision decide(const boost::asio::ip::address& address, std::uint16_t port) const noexcept;
  // The rule that lets this policy reach a special address on purpose (a cidr allow rule
  // or floor covering it, and no deny covering it), or nullptr.
  const std::string* cidr_allowance(const boost::asio::ip::address& address, std::uint16_t port) const noexcept;

  const std::string& name() const noexcept { return name_; }
  policy_mode mode() const noexcept { return mode_; }

 private:
  decision soften(decision d) const noexcept;

  std::string name_;
  policy_mode mode_;
  std::shared_ptr<const floors> floor_;
  rule_index allow_;
  rule_index deny_;
};

class snapshot {
 public:
  // Compiles a validated configuration. Fails only when a rule list cannot be built
  // (the regexes exceed RE2's budget); the errors name the policy.
  static boost::system::result<std::shared_ptr<const snapshot>, std::vector<config_error>> compile(const config& cfg);

  struct session {
    std::string_view id;
    const compiled_policy* policy;
  };
  // The session a source address belongs to: a session registered at run time first, then
  // the longest configured prefix, then the default policy. nullopt (the caller denies
  // with reason no_session) when none applies, or when a registered session names a
  // policy this snapshot does not have: never a fall-back to a broader binding.
  std::optional<session> session_for(const boost::asio::ip::address& source,
                                     const session_table* registered = nullptr) const noexcept;

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
