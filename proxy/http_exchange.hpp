#pragma once
// Requests on a connection airlock serves itself: TLS terminated for a rule with
// `inspect: true`, or plain HTTP whose policy follows redirects from its host. Each
// request is read with the proxy's strict head parser, judged on its own (Host against
// the connection's name, method and path against the rule), logged on its own `http`
// line, and forwarded; each response is read for the redirect it may carry. Bodies
// stream through in both directions; nothing is buffered whole.
#include "policy/domain_name.hpp"
#include "policy/redirect_grants.hpp"
#include "policy/snapshot.hpp"
#include "proxy/connection.hpp"
#include "proxy/limits.hpp"
#include "record/decision.hpp"

#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <cstdint>
#include <string>

namespace airlock::proxy {

struct exchange_setup {
  // Of the proxy's context (proxy_context), what an exchange uses: where its lines go, the
  // redirect allowances its 3xx may grant (optional), and how long it may stay idle.
  record::decision_sink& log;
  policy::redirect_grants* grants;
  std::chrono::steady_clock::duration idle;
  const policy::compiled_policy& policy;
  const policy::domain_name& name;  // the connection's name: SNI, or the first request's Host
  std::uint16_t port;
  bool tls;  // TLS terminated by airlock (false: plain HTTP)
  // The name, airlock's resolution and the client's destination agree: only then may a
  // credential be put on a request.
  bool destination_agrees;
  const record::decision_record& connection;  // its line's shared fields are copied into each request's
  limiter::ticket& ticket;
  // The allowing rule's port carries `any` (policy/port_protocol.hpp): a request may switch
  // protocols (Upgrade, CONNECT), and after a 101 the bytes are relayed as they come.
  // Otherwise such a request is refused protocol_not_allowed. Plain HTTP only.
  bool upgrades = false;
  // Each allowed request gets an `http` line (inspection, followed redirects); false: only
  // refused ones do, the connection's line standing for the rest.
  bool log_allowed = true;
  // The explicit listener's absolute-form requests: sent on in origin-form, without the
  // headers meant for the proxy (Proxy-Authorization, Proxy-Connection).
  bool from_proxy_client = false;
  // The connection was let through by a followed redirect's one-shot allowance (used up by
  // then) or a grant: its requests for the same host stand on that, not on a rule; while
  // the grant's `cut` switch is not pulled.
  std::optional<policy::reason> granted = std::nullopt;
  const base::cut_switch* cut = nullptr;
};

struct exchange_totals {
  std::uint64_t up = 0;    // bytes of requests forwarded (heads and bodies, as plaintext)
  std::uint64_t down = 0;  // bytes of responses forwarded
  std::uint64_t requests = 0;
  bool cut = false;    // a session's byte budget ended it
  bool clean = false;  // every message it forwarded was complete (a TLS close_notify may say so)
};

// Serves requests until either side closes, a request is refused (answered, then the
// connection closed), or the idle limit passes between requests.
template <typename Client, typename Upstream>
boost::asio::awaitable<exchange_totals> serve_requests(Client& client, Upstream& upstream, exchange_setup& x);

}  // namespace airlock::proxy
