#include "proxy/served_connection.hpp"

#include "base/deadline.hpp"
#include "certs/tls_contexts.hpp"
#include "proxy/h2_exchange.hpp"
#include "proxy/http_exchange.hpp"
#include "proxy/refusals.hpp"
#include "proxy/served_streams.hpp"
#include "proxy/upstream_connect.hpp"

#include <optional>

namespace airlock::proxy {

namespace asio = boost::asio;
namespace beast = boost::beast;
using asio::ip::tcp;
using base::nothrow;
using policy::reason;
using policy::verdict;

namespace {

// Closing words on both sides, briefly: a peer that does not answer close_notify in time
// is simply closed.
template <typename Stream>
asio::awaitable<void> tls_goodbye(Stream& s) {
  beast::get_lowest_layer(s).expires_after(std::chrono::seconds(1));
  co_await s.async_shutdown(nothrow);
}

// Connects to airlock's resolution of the name; on failure the client is refused in its
// channel's language and the socket stays closed.
asio::awaitable<std::optional<tcp::socket>> connect_upstream(tcp::socket& client, sniffed::kind channel,
                                                             const served_target& t, record::decision_line& line,
                                                             proxy_context& ctx) {
  tcp::socket raw(client.get_executor());
  const auto reached = co_await steps::connect_resolved(raw, ctx, t.policy, &t.name, t.addresses, t.port);
  if (!reached) {
    co_await steps::refuse_unreached(client, channel, line, reached);
    co_return std::nullopt;
  }
  line.record().upstream = steps::text(*reached);
  co_return std::move(raw);
}

}  // namespace

asio::awaitable<void> serve_inspected(tcp::socket& client, sniffed& first, const served_target& t,
                                      record::decision_line& line, proxy_context& ctx, limiter::ticket& ticket) {
  auto& rec = line.record();
  if (ctx.inspection == nullptr) {
    // The config loader refuses inspect rules without a CA; reaching here is a bug.
    rec.verdict = verdict::deny;
    rec.reason = reason::internal_error;
    rec.notes.push_back("inspection_not_configured");
    co_await steps::refuse(client, sniffed::kind::tls, line);
    co_return;
  }
  auto raw = co_await connect_upstream(client, sniffed::kind::tls, t, line, ctx);
  if (!raw) co_return;

  // The origin first: a certificate that does not verify is a denial the client hears
  // as a TLS alert, before it ever trusts airlock's leaf for that name.
  served_upstream_tls upstream(beast::tcp_stream(std::move(*raw)), ctx.inspection->upstream);
  // h2 is offered to the origin when the sandbox offered it, and to the sandbox only when
  // the origin chose it (else http/1.1 both ways).
  auto prepared = certs::prepare_upstream(upstream.native_handle(), t.name.str());
  if (prepared && first.offers_h2) prepared = certs::offer_h2(upstream.native_handle());
  if (!prepared) {
    rec.verdict = verdict::deny;
    rec.reason = reason::internal_error;
    rec.notes.push_back("upstream_tls_setup");
    co_await steps::refuse(client, sniffed::kind::tls, line);
    co_return;
  }
  beast::get_lowest_layer(upstream).expires_after(ctx.settings.connect_limit);
  if (auto [hec] = co_await upstream.async_handshake(asio::ssl::stream_base::client, nothrow); hec) {
    rec.verdict = verdict::deny;
    rec.reason = reason::upstream_tls;
    const auto why = certs::verify_failure(upstream.native_handle());
    rec.notes.push_back("upstream_tls:" + (why.empty() ? hec.message() : std::string(why)));
    co_await steps::refuse(client, sniffed::kind::tls, line);
    co_return;
  }

  // Then the client, with a leaf for the name it asked for.
  auto leaf = ctx.inspection->minter.get(t.name.str());
  if (!leaf) {
    rec.verdict = verdict::deny;
    rec.reason = reason::internal_error;
    rec.notes.push_back("leaf_certificate:" + leaf.error());
    co_await steps::refuse(client, sniffed::kind::tls, line);
    co_return;
  }
  served_client_tls sandbox(served_client_tcp(beast::tcp_stream(std::move(client)), std::move(first.bytes)),
                            ctx.inspection->server);
  if (certs::negotiated_h2(upstream.native_handle())) certs::allow_h2(sandbox.native_handle());
  if (auto used = certs::use_leaf(sandbox.native_handle(), **leaf); !used) {
    rec.verdict = verdict::deny;
    rec.reason = reason::internal_error;
    rec.notes.push_back("leaf_certificate:" + used.error());
    co_return;
  }
  rec.notes.push_back("inspected");
  line.decide();  // the origin verified and a leaf is ready: what remains is the client's part
  beast::get_lowest_layer(sandbox).expires_after(peek_limit(ctx));
  if (auto [hec] = co_await sandbox.async_handshake(asio::ssl::stream_base::server, nothrow); hec) {
    // Allowed, but the client would not talk to airlock's leaf: usually a sandbox that
    // was not given airlock's CA.
    rec.notes.push_back("client_tls:" + hec.message());
    co_return;
  }

  exchange_setup x{ctx.log, ctx.grants, idle_limit(ctx),      t.policy, t.name,
                   t.port,  true,       t.destination_agrees, rec,      ticket};
  exchange_totals totals;
  if (certs::negotiated_h2(sandbox.native_handle())) {
    rec.notes.push_back("h2");
    std::string failure;
    totals = co_await serve_h2(sandbox, upstream, x, failure);
    if (!failure.empty()) rec.notes.push_back(std::move(failure));
  } else {
    totals = co_await serve_requests(sandbox, upstream, x);
  }
  rec.bytes_up = totals.up;
  rec.bytes_down = totals.down;
  if (totals.cut) record::mark_cut(rec, ticket.spent());
  // close_notify tells a client that what it got is complete: only when it is.
  if (totals.clean) {
    co_await tls_goodbye(sandbox);
    co_await tls_goodbye(upstream);
  }
}

asio::awaitable<void> serve_plain_http(tcp::socket& client, sniffed& first, const served_target& t,
                                       record::decision_line& line, proxy_context& ctx, limiter::ticket& ticket) {
  auto& rec = line.record();
  auto raw = co_await connect_upstream(client, sniffed::kind::http, t, line, ctx);
  if (!raw) co_return;
  rec.notes.push_back("requests_judged");
  line.decide();
  served_upstream_tcp upstream(std::move(*raw));
  served_client_tcp sandbox(beast::tcp_stream(std::move(client)), std::move(first.bytes));
  exchange_setup x{ctx.log, ctx.grants, idle_limit(ctx),      t.policy, t.name,
                   t.port,  false,      t.destination_agrees, rec,      ticket};
  x.upgrades = t.upgrades;
  x.log_allowed = t.log_requests;
  x.from_proxy_client = t.from_proxy_client;
  x.granted = t.granted;
  x.cut = t.cut;
  const auto totals = co_await serve_requests(sandbox, upstream, x);
  // Allowed requests without lines of their own: the connection's line counts them.
  if (!t.log_requests) rec.notes.push_back("requests:" + std::to_string(totals.requests));
  rec.bytes_up = totals.up;
  rec.bytes_down = totals.down;
  if (totals.cut) record::mark_cut(rec, ticket.spent());
}

}  // namespace airlock::proxy
