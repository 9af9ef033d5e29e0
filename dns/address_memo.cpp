#include "dns/address_memo.hpp"

#include <algorithm>

namespace airlock::dns {

const std::string& address_memo::key_of(std::string_view name, ask_first first) {
  key_.assign(name);
  key_.push_back(first == ask_first::aaaa ? '6' : '4');  // always one character: no two keys collide
  return key_;
}

const std::vector<boost::asio::ip::address>* address_memo::find(std::string_view name, ask_first first,
                                                                clock::time_point now) {
  auto it = kept_.find(key_of(name, first));
  if (it == kept_.end()) return nullptr;
  if (now >= it->second.until) {
    kept_.erase(it);
    return nullptr;
  }
  return &it->second.addresses;
}

void address_memo::keep(std::string_view name, ask_first first, const found_addresses& found, clock::time_point now) {
  if (found.addresses.empty() || found.ttl == 0) return;
  if (kept_.size() >= max_names) kept_.clear();
  const auto keep_for = std::min<std::chrono::seconds>(std::chrono::seconds(found.ttl), max_keep);
  kept_.insert_or_assign(key_of(name, first), kept{found.addresses, now + keep_for});
}

}  // namespace airlock::dns
