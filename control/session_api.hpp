#pragma once
// What a launcher needs from a daemon: where its listeners are, and a session registered
// for a sandbox's source address and later removed with its totals. Two implementations:
// the control API client (a daemon is running) and the embedded daemon (none is).
#include "base/result.hpp"

#include <boost/asio/ip/address.hpp>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace airlock::control {

// The same alias as base::result, not another: daemon/embedded.cpp names it control::result.
using base::result;

struct session_request {
  std::string id;                    // empty: the daemon picks one
  std::vector<std::string> sources;  // CIDRs, e.g. "198.18.0.2/32"
  std::string policy;                // a policy of the daemon's config; empty: its default policy
  std::vector<std::string> allow;    // extra HOST[:PORT] allowances on top of `policy`
  std::vector<std::pair<std::string, std::string>> labels;
  std::string netns;  // the sandbox's network namespace (a path), for process attribution
};

struct session_totals {
  std::uint64_t dns_queries = 0;
  std::uint64_t connections_allowed = 0;
  std::uint64_t connections_denied = 0;  // audit-deny included
  std::uint64_t bytes_up = 0;
  std::uint64_t bytes_down = 0;
};

// Where a sandbox's redirected traffic must go: ports of listeners bound to a wildcard
// address (or to the gateway address), since nft REDIRECT rewrites the destination to
// the receiving interface's own address.
struct listener_ports {
  std::uint16_t proxy = 0;
  // A second proxy listener port the sandbox can reach, used for TCP to :443 (0: none,
  // everything goes to `proxy`). With one port for every destination port, a client's
  // :80 and :443 connections share four-tuples after REDIRECT, and a SYN meeting the
  // TIME_WAIT of the other one is dropped (PAWS) and resent 10-20 ms later.
  std::uint16_t https = 0;
  std::uint16_t dns = 0;
  bool reachable_from_sandbox = false;  // false when they are bound to loopback only
  std::string decisions_log;            // where this daemon writes ("-" for stdout)
  std::string inspection_ca;            // the CA certificate sandboxes should trust ("" without inspection)
};

// How both implementations choose among their listeners (pure, unit-tested): `proxy` and
// `dns` are the first endpoint not bound to loopback (else the first one, and
// reachable_from_sandbox stays false); `https` is the first such proxy endpoint whose port
// differs from `proxy` (and from `dns`), when `proxy` is reachable.
struct bound_endpoint {
  boost::asio::ip::address address;
  std::uint16_t port = 0;
};
listener_ports choose_listeners(const std::vector<bound_endpoint>& proxy, const std::vector<bound_endpoint>& dns);
// The same choice from the text of GET /v1/info (its "proxy" and "dns" arrays of
// {"address", "port"}, "decisions_log", "inspection_ca"); an error when it is not a JSON object.
result<listener_ports> listeners_from_info(std::string_view info_json);

class session_api {
 public:
  virtual ~session_api() = default;
  virtual result<listener_ports> listeners() = 0;
  virtual result<std::string> register_session(const session_request& request) = 0;  // the id
  virtual result<session_totals> remove_session(const std::string& id) = 0;
  virtual result<void> set_context(const std::string& id, const std::string& tool_call,
                                   const std::vector<std::pair<std::string, std::string>>& labels) = 0;
};

// The control API client: HTTP/1.1 + JSON over the daemon's unix socket.
result<std::unique_ptr<session_api>> connect_control(const std::string& socket_path);

}  // namespace airlock::control
