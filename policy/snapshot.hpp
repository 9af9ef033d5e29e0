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
#include <unordered_map>
#include <vector>

namespace airlock::policy {

// What decided, and why. `rule` points into the snapshot ("FILE:LINE" or "default"):
// keep the snapshot alive while the decision is used.
struct decision {
  policy::verdict verdict = verdict::deny;
  policy::reason reason = reason::internal_error;
  std::string_view rule = "default";
  bool inspect = false;                         // the allowing rule asks for TLS inspection
  port_protocol protocol = port_protocol::any;  // allowed: what the allowing rule lets be spoken on the port

  bool allowed() const noexcept { return verdict != verdict::deny; }
};

// A header airlock adds to a request on an inspected (TLS-terminated) connection. Only
// ever put on a connection airlock itself terminated, never on plain HTTP or a relayed
// one. `value` is the secret: never log it, never put it in a message.
struct credential {
  std::string header;  // as written, e.g. "Authorization"
  std::string value;
  std::string rule;  // "FILE:LINE" of the credentials entry (what a log line may name)
};

// A `redirects:` entry as written (from, to patterns, mark): on an inspected (or plain
// HTTP) connection to `from`, a redirect to a host matching one of `to` may be followed
// once (redirect_grants.hpp). `mark.to_string()` is the rule a log line names.
using redirect_rule = redirect_config;

// The operator floors, shared by every policy of a snapshot.
struct floors {
  rule_index deny;   // always_deny: beats everything, audit mode included
  rule_index allow;  // always_allow: beats a policy's own rules
};

class compiled_policy {
 public:
  compiled_policy(std::string name, policy_mode mode, std::shared_ptr<const floors> floor);
  std::optional<std::string> build(const policy_config& cfg);

  // Decides a connection (or, with any_port, a DNS query) to `name` whose first bytes
  // were `spoken`: a rule allows when it matches the name, covers the port and lets that be
  // spoken there (port_protocol.hpp); one that would but for the protocol makes the denial
  // protocol_not_allowed. `unjudged` asks about the name and port alone (DNS, `airlock
  // test`, a redirect's target): every connection the proxy judges passes what it read.
  decision decide(const domain_name& name, std::uint16_t port, wire spoken = wire::unjudged) const noexcept;
  // Decides a connection to a bare address (no name): only cidr rules can allow it.
  decision decide(const boost::asio::ip::address& address, std::uint16_t port,
                  wire spoken = wire::unjudged) const noexcept;
  // The rule that lets this policy reach a special address on purpose (a cidr allow rule
  // or floor covering it, and no deny covering it), or nullptr. `own_only`: the address is
  // one of airlock's own (policy/own_addresses.hpp), and only a rule with `own: true` counts.
  const std::string* cidr_allowance(const boost::asio::ip::address& address, std::uint16_t port,
                                    bool own_only = false) const noexcept;

  // Decides one HTTP request on a connection decide() allowed with inspect (TLS airlock
  // terminates, or plain HTTP judged request by request). `target` is the request target
  // as sent. Order: a malformed target (not origin-form "/...", bytes outside visible
  // ASCII, '#', a bad or control %-escape) is parse_error; then always_deny, always_allow,
  // the policy's deny, its allow, where a rule admits the request when it covers the port,
  // one of its `paths:` (if any) holds the decoded path (request_target.hpp) and its
  // `methods:` (if any) list the method. A rule with paths never judges an ambiguous path
  // (%2F, %5C, '\', "//", "..", a "." segment): parse_error when nothing else admits it.
  // Otherwise method_not_allowed (a rule admits the path, not the method), path_not_allowed,
  // port_not_allowed or host_not_allowed; `rule` names the refusing rule. Audit mode
  // softens the policy's own denials as decide() does; parse_error is never softened.
  decision decide_request(const domain_name& name, std::uint16_t port, std::string_view method,
                          std::string_view target) const noexcept;

  // The credential to add to a request for `name` whose target (or path) is `target`:
  // the entry with the longest `path` prefix covering the decoded path, or nullptr. A
  // malformed target gets none; an ambiguous one only an entry for the whole host ("/").
  const credential* credential_for(const domain_name& name, std::string_view target) const noexcept;

  // The first `redirects:` entry (file order) from exact `from` whose `to` matches `to`
  // (exact, or "*.suffix" for subdomains only), or nullptr.
  const redirect_rule* redirect_to(const domain_name& from, const domain_name& to) const noexcept;
  // True when some `redirects:` entry starts at `from` (its plain HTTP responses are worth
  // reading for redirects even without inspect).
  bool redirects_from(const domain_name& from) const noexcept;

  const std::string& name() const noexcept { return name_; }
  policy_mode mode() const noexcept { return mode_; }
  // How long a denial for want of a rule waits for an approver (`approval:`); none: it
  // stands at once. Audit mode holds nothing: its denials pass anyway.
  std::optional<std::chrono::milliseconds> approval_wait() const noexcept {
    return mode_ == policy_mode::enforce ? approval_wait_ : std::nullopt;
  }

 private:
  decision soften(decision d) const noexcept;

  std::string name_;
  policy_mode mode_;
  std::shared_ptr<const floors> floor_;
  rule_index allow_;
  rule_index deny_;
  struct credential_entry {
    std::string path;  // decoded prefix
    credential cred;
  };
  // host -> entries, longest path first.
  std::unordered_map<std::string, std::vector<credential_entry>> credentials_;
  std::vector<redirect_rule> redirects_;
  std::optional<std::chrono::milliseconds> approval_wait_;
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

  // Why session_for found none for `source`: session_unknown (and the holding session's id
  // in `held`) when a registered session holds it under a policy this snapshot lacks
  // (one restored after a restart whose policy left the config), else no_session.
  static reason no_session_reason(const boost::asio::ip::address& source, const session_table* registered,
                                  std::string* held = nullptr);

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
