#include "policy/session_table.hpp"

#include <algorithm>

namespace airlock::policy {

session_table::session_table(std::vector<runtime_session> sessions) : sessions_(std::move(sessions)) {
  for (std::size_t i = 0; i < sessions_.size(); ++i)
    for (const auto& c : sessions_[i].sources) by_prefix_.emplace_back(c, i);
  std::stable_sort(by_prefix_.begin(), by_prefix_.end(),
                   [](const auto& a, const auto& b) { return a.first.prefix > b.first.prefix; });
}

const runtime_session* session_table::find(const boost::asio::ip::address& source) const noexcept {
  for (const auto& [prefix, index] : by_prefix_)
    if (prefix.contains(source)) return &sessions_[index];
  return nullptr;
}

}  // namespace airlock::policy
