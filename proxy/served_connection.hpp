#pragma once
// Allowed connections airlock serves itself instead of relaying bytes: TLS terminated
// with a leaf from airlock's CA (rules with `inspect: true`), and plain HTTP whose
// requests must each be judged (an inspecting rule, or redirects followed from its host).
// Both end in serve_requests (proxy/http_exchange.hpp).
#include "policy/domain_name.hpp"
#include "policy/snapshot.hpp"
#include "proxy/connection.hpp"
#include "proxy/limits.hpp"
#include "proxy/sniff.hpp"
#include "proxy/steps.hpp"

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <cstdint>
#include <vector>

namespace airlock::proxy {

// What the connection was judged to be, and where airlock resolved it.
struct served_target {
  const policy::compiled_policy& policy;
  const policy::domain_name& name;
  std::uint16_t port;
  std::vector<boost::asio::ip::address> addresses;  // airlock's own resolution
  bool destination_agrees;                          // the client aimed at one of those addresses
  // Plain HTTP (proxy/http_exchange.hpp, exchange_setup): the port carries `any`; each
  // allowed request gets its own line; requests come from an explicit proxy's client.
  bool upgrades = false;
  bool log_requests = true;
  bool from_proxy_client = false;
  // Allowed by a redirect's one-shot allowance or a grant (judge.hpp, granted_by); a
  // grant's cut switch, when it cuts: pulled, the connection's next request is refused.
  std::optional<policy::reason> granted = std::nullopt;
  const base::cut_switch* cut = nullptr;
};

boost::asio::awaitable<void> serve_inspected(boost::asio::ip::tcp::socket& client, sniffed& first,
                                             const served_target& t, record::decision_line& line, proxy_context& ctx,
                                             limiter::ticket& ticket);

boost::asio::awaitable<void> serve_plain_http(boost::asio::ip::tcp::socket& client, sniffed& first,
                                              const served_target& t, record::decision_line& line, proxy_context& ctx,
                                              limiter::ticket& ticket);

}  // namespace airlock::proxy
