#pragma once
// Sessions registered at run time (by the launcher or an agent runtime, through the
// control API): source prefixes bound to a policy by name, with labels. They take
// precedence over the config's `sessions:`. Immutable once built; the registry swaps a
// whole new table in, like the policy snapshot.
#include "policy/cidr.hpp"

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace airlock::policy {

struct runtime_session {
  std::string id;
  std::vector<cidr> sources;
  std::string policy;  // a policy name of the current snapshot
  std::vector<std::pair<std::string, std::string>> labels;
};

class session_table {
 public:
  explicit session_table(std::vector<runtime_session> sessions);

  // The registered session whose source prefix is the longest match, or nullptr.
  const runtime_session* find(const boost::asio::ip::address& source) const noexcept;
  const std::vector<runtime_session>& sessions() const noexcept { return sessions_; }

 private:
  std::vector<runtime_session> sessions_;
  std::vector<std::pair<cidr, std::size_t>> by_prefix_;  // longest first
};

}  // namespace airlock::policy
