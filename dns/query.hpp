#pragma once
// One DNS query, top to bottom: parse, find the session, decide, resolve upstream,
// filter the answer, reply under the client's own id, log exactly one decision.
#include "attribution/finder.hpp"
#include "core/decision.hpp"
#include "core/token_bucket.hpp"
#include "dns/answer_cache.hpp"
#include "dns/answer_filter.hpp"
#include "dns/name_table.hpp"
#include "dns/resolver.hpp"
#include "policy/redirect_grants.hpp"
#include "policy/store.hpp"

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/address.hpp>

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <functional>
#include <unordered_map>

namespace airlock::dns {


struct query_context {
  policy::store& policies;
  resolver& upstream;
  core::decision_sink& log;
  name_table& names;
  answer_cache& cache;
  policy::dns_config settings{};  // from the config's `dns:` (rate, refused types, deny rcode)
  filter_settings filter{};
  // One bucket per session id: bounded by the number of sessions, not by clients.
  std::unordered_map<std::string, core::token_bucket> buckets{};
  // Process attribution for sessions started by airlock (optional, as in the proxy).
  attribution::finder* finder = nullptr;
  std::function<std::string(std::string_view)> netns_of{};
  // One-shot allowances from redirects the proxy followed (shared with it); optional.
  policy::redirect_grants* grants = nullptr;
};

// The reply to send, or nullopt to stay silent (input too broken to answer).
// `max_reply` is the transport's ceiling: the client's EDNS size over UDP, 65535 over TCP.
boost::asio::awaitable<std::optional<std::string>> answer_query(query_context& ctx,
                                                                std::span<const std::byte> packet,
                                                                const boost::asio::ip::address& client_address,
                                                                std::uint16_t client_port, bool over_udp);

}  // namespace airlock::dns
