#pragma once
// One transparent connection, top to bottom: original destination, session, sniff,
// decide, connect to airlock's own resolution, relay, log.
#include "attribution/finder.hpp"
#include "base/overload.hpp"
#include "dns/address_memo.hpp"
#include "dns/answer_cache.hpp"
#include "dns/name_table.hpp"
#include "dns/resolver.hpp"
#include "policy/store.hpp"
#include "proxy/limits.hpp"
#include "record/decision.hpp"

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace boost::asio::ssl {
class context;
}
namespace airlock::certs {
class leaf_minter;
}
namespace airlock::policy {
class redirect_grants;
class session_grants;
}  // namespace airlock::policy
namespace airlock::record {
class approval_desk;
}

namespace airlock::proxy {

// What TLS inspection needs, when some rule asks for it (else absent).
struct inspection_tls {
  certs::leaf_minter& minter;           // leaves for the names sandboxes ask for
  boost::asio::ssl::context& server;    // the sandbox-facing side
  boost::asio::ssl::context& upstream;  // the origin-facing side: verifies against the trust store
};

// Connection numbers for the log: unique in the process, also when several loops each
// hold a copy of the context.
class connection_ids {
 public:
  std::uint64_t next() noexcept { return counter_->fetch_add(1, std::memory_order_relaxed) + 1; }

 private:
  std::shared_ptr<std::atomic<std::uint64_t>> counter_ = std::make_shared<std::atomic<std::uint64_t>>(0);
};

struct proxy_settings {
  std::chrono::steady_clock::duration peek_limit = std::chrono::seconds(5);
  // Silence for this long from a transparent client: it waits for the server to speak.
  std::chrono::steady_clock::duration quiet_limit = std::chrono::seconds(1);
  std::chrono::steady_clock::duration connect_limit = std::chrono::seconds(10);
  std::chrono::steady_clock::duration idle_limit = std::chrono::minutes(10);
  bool refuse_when_unrecorded = true;  // `log.when_unwritable: refuse` (policy::config)
};

struct proxy_context {
  policy::store& policies;
  dns::resolver& resolver;
  record::decision_sink& log;
  const dns::name_table& names;
  dns::answer_cache& cache;
  proxy_settings settings;
  connection_ids conn_ids{};                // copies of a context (one per loop) share the counter
  limiter limits{policy::limits_config{}};  // copies share the counters
  // Process attribution, for sessions started by airlock: the finder, and the network
  // namespace of a session ("" when it has none). Both optional.
  attribution::finder* finder = nullptr;
  std::function<std::string(std::string_view)> netns_of{};
  inspection_tls* inspection = nullptr;
  // One-shot allowances from followed redirects, and the sessions' grants, shared with
  // the DNS server.
  policy::redirect_grants* grants = nullptr;
  policy::session_grants* session_grants = nullptr;
  // Denials held for an approver (policies with `approval:`), shared with the DNS server.
  record::approval_desk* approvals = nullptr;
  // Set on the copies other event loops hold: the loop that owns `resolver` and `cache`
  // (neither is thread-safe), where own resolution runs. Everything else a context points
  // at (policy, log, name table, limits, connection ids, inspection, grants) is shared
  // and safe across threads.
  std::optional<boost::asio::any_io_executor> dns_loop{};
  // Memory pressure (base/overload.hpp), shared; null when not watched.
  const base::overload_state* overload = nullptr;
  // What own resolution found lately, for this loop only: each loop has its own copy of
  // the context, made before it starts.
  dns::address_memo memo{};
};

// The peek and idle limits a new connection gets: a quarter of the configured ones (at
// least a second) while memory is short.
inline std::chrono::steady_clock::duration peek_limit(const proxy_context& ctx) noexcept {
  if (ctx.overload == nullptr || !ctx.overload->shrinking()) return ctx.settings.peek_limit;
  return std::max<std::chrono::steady_clock::duration>(ctx.settings.peek_limit / 4, std::chrono::seconds(1));
}
inline std::chrono::steady_clock::duration idle_limit(const proxy_context& ctx) noexcept {
  if (ctx.overload == nullptr || !ctx.overload->shrinking()) return ctx.settings.idle_limit;
  return std::max<std::chrono::steady_clock::duration>(ctx.settings.idle_limit / 4, std::chrono::seconds(1));
}

// A transparently intercepted connection; `peer` is the client's address as accepted.
// From a REDIRECT listener (`listen.proxy`) and from a TPROXY one (`listen.tproxy`): the
// same steps, only the original destination is read another way. The client socket is
// expected to inherit TCP_NODELAY from its listener.
boost::asio::awaitable<void> handle_connection(boost::asio::ip::tcp::socket client, boost::asio::ip::tcp::endpoint peer,
                                               proxy_context& ctx);
boost::asio::awaitable<void> handle_tproxy_connection(boost::asio::ip::tcp::socket client,
                                                      boost::asio::ip::tcp::endpoint peer, proxy_context& ctx);

// The explicit listener (HTTP_PROXY/HTTPS_PROXY): CONNECT host:port and absolute-form
// http:// requests, judged like transparent ones; a denial is a 403 with a JSON body.
boost::asio::awaitable<void> handle_explicit_connection(boost::asio::ip::tcp::socket client,
                                                        boost::asio::ip::tcp::endpoint peer, proxy_context& ctx);

}  // namespace airlock::proxy
