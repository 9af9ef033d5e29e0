// One connection to the explicit listener (HTTP_PROXY / HTTPS_PROXY users), top to
// bottom: session by source address, the proxy request (CONNECT host:port, or an
// absolute-form http:// request), the same decision as the transparent path, airlock's own
// resolution, then a tunnel or one forwarded request.
#include "proxy/connection.hpp"

#include "base/deadline.hpp"
#include "proxy/approval_step.hpp"
#include "proxy/http_head.hpp"
#include "proxy/judge.hpp"
#include "proxy/plain_requests.hpp"
#include "proxy/relay.hpp"
#include "proxy/served_connection.hpp"
#include "proxy/sniff.hpp"
#include "proxy/steps.hpp"

#include <boost/asio/write.hpp>

namespace airlock::proxy {

namespace asio = boost::asio;
using asio::ip::tcp;
using base::nothrow;
using policy::reason;
using policy::verdict;

namespace {

// Answers a granted CONNECT with 200, so the tunnel's first bytes can be read and judged.
// False when it cannot: bytes came before the grant (they would pass unjudged; refused), or
// the client left.
asio::awaitable<bool> grant_tunnel(tcp::socket& client, const sniffed& request, record::decision_line& guard) {
  auto& rec = guard.record();
  if (request.bytes.size() > request.head_size) {
    rec.verdict = verdict::deny;
    rec.reason = reason::parse_error;
    rec.notes.push_back("data_before_connect_established");
    co_await steps::refuse(client, sniffed::kind::http, guard);
    co_return false;
  }
  static constexpr std::string_view established = "HTTP/1.1 200 Connection established\r\n\r\n";
  if (auto [wec, wn] = co_await asio::async_write(client, asio::buffer(established), nothrow); wec) {
    rec.notes.push_back("client_gone");
    co_return false;
  }
  co_return true;
}

// CONNECT to a name whose rule inspects: the tunnel is opened, its ClientHello must name
// the CONNECT host (else the tunnel would carry another name), and the TLS inside is
// served like a transparent inspected connection.
asio::awaitable<void> inspect_tunnel(tcp::socket& client, sniffed& request, const served_target& t,
                                     record::decision_line& guard, proxy_context& ctx, limiter::ticket& ticket) {
  auto& rec = guard.record();
  if (!co_await grant_tunnel(client, request, guard)) co_return;
  auto hello = co_await sniff(client, peek_limit(ctx));
  if (hello.failure || hello.type != sniffed::kind::tls) {
    rec.verdict = verdict::deny;
    rec.reason = hello.failure.value_or(reason::parse_error);
    rec.notes.push_back("tunnel_without_tls");
    co_await steps::refuse(client, sniffed::kind::unknown, guard);
    co_return;
  }
  if (!hello.name.empty()) {
    auto sni = policy::domain_name::parse(hello.name);
    if (!sni.has_value() || !(*sni == t.name)) {
      rec.verdict = verdict::deny;
      rec.reason = reason::sni_host_mismatch;
      rec.notes.push_back("sni:" + hello.name);
      co_await steps::refuse(client, sniffed::kind::tls, guard);
      co_return;
    }
  }
  co_await serve_inspected(client, hello, t, guard, ctx, ticket);
}

// A CONNECT tunnel that is not inspected: granted (200), then its first bytes judged as a
// transparent connection's would be (proxy/judge.hpp, judge_tunnel), before anything goes
// upstream. The judged bytes, or nullopt when the tunnel was refused (and answered).
asio::awaitable<std::optional<sniffed>> judge_tunnel_bytes(tcp::socket& client, const sniffed& request,
                                                           const judgement& granted, std::uint16_t port,
                                                           const policy::compiled_policy& policy,
                                                           record::decision_line& guard, proxy_context& ctx,
                                                           policy::port_protocol& carried) {
  auto& rec = guard.record();
  if (!co_await grant_tunnel(client, request, guard)) co_return std::nullopt;
  auto inside = co_await sniff(client, peek_limit(ctx), ctx.settings.quiet_limit);
  if (inside.silent) rec.notes.push_back("client_silent");
  rec.notes.push_back(inside.type == sniffed::kind::tls    ? "tunnel:tls"
                      : inside.type == sniffed::kind::http ? "tunnel:http"
                                                           : "tunnel:tcp");
  auto j = judge_tunnel(inside, granted, request.name, port, policy);
  carried = j.protocol;
  for (auto& note : j.notes) rec.notes.push_back(std::move(note));
  rec.verdict = j.verdict;
  rec.reason = j.reason;
  rec.rule = j.rule;
  if (j.verdict == verdict::deny) {
    co_await steps::refuse(client, inside.type, guard);
    co_return std::nullopt;
  }
  co_return inside;
}

// Step 3's decision (proxy/judge.hpp), on `rec`: a name by the policy, an address the
// client named (`literal`) only by a cidr rule.
judgement judge_proxy_request(const sniffed& request, const asio::ip::address* literal, std::uint16_t port, bool tunnel,
                              const policy::snapshot::session& session, proxy_context& ctx,
                              record::decision_record& rec) {
  judgement d;
  if (literal != nullptr) {
    d = judge_address(*literal, port, *session.policy, tunnel ? policy::wire::unjudged : policy::wire::http);
  } else {
    // A redirect followed inside an inspected tunnel lets this one through (once). A
    // tunnel's protocol is judged on its first bytes (judge_tunnel_bytes), a request's here.
    d = judge_host(request.name, port, session.id, *session.policy, {ctx.grants, ctx.session_grants},
                   tunnel ? policy::wire::unjudged : policy::wire::http);
    if (!d.logged_name.empty()) rec.name = std::move(d.logged_name);
    for (auto& note : d.notes) rec.notes.push_back(std::move(note));
  }
  rec.verdict = d.verdict;
  rec.reason = d.reason;
  rec.rule = d.rule;
  return d;
}

// A CONNECT tunnel that is not inspected, granted (`granted`, with the name it connects
// to) and its first bytes judged (judge_tunnel_bytes): plain HTTP to a name has every
// request judged, as on the transparent path (relayed through the request gate, or served
// here); anything else is connected and its first bytes sent up. True when the relay may
// start (the line handed to `line`); false when the tunnel was refused or served to its end.
asio::awaitable<bool> open_tunnel(tcp::socket& client, const sniffed& request, const judgement& granted,
                                  std::uint16_t port, const std::shared_ptr<const policy::snapshot>& snap,
                                  const policy::snapshot::session& session,
                                  const std::vector<asio::ip::address>& targets, tcp::socket& upstream,
                                  proxy_context& ctx, limiter::ticket& ticket, record::decision_line& guard,
                                  record::decision_line& line, steps::relay_plan& plan) {
  auto& rec = guard.record();
  const auto& name = granted.name;
  policy::port_protocol carried = policy::port_protocol::any;
  auto inside = co_await judge_tunnel_bytes(client, request, granted, port, *session.policy, guard, ctx, carried);
  if (!inside) co_return false;
  if (name && inside->type == sniffed::kind::http && rec.verdict == verdict::allow) {
    // Plain HTTP in a tunnel: every request judged, as on the transparent path.
    served_target target{*session.policy, *name, port, targets, true};
    target.upgrades = carried == policy::port_protocol::any;
    target.log_requests = session.policy->redirects_from(*name);
    target.granted = granted_by(rec.reason);
    target.cut = granted.cut.get();
    plan.cut = granted.cut;
    if (!served_not_relayed(target)) {
      // Named, not a temporary in the co_await (GCC 12 destroys those twice).
      std::shared_ptr<const policy::compiled_policy> judging(snap, session.policy);
      co_return co_await start_judged_relay(client, inside->bytes, target, std::move(judging), upstream, ctx, guard,
                                            line, plan);
    }
    co_await serve_plain_http(client, *inside, target, guard, ctx, ticket);
    co_return false;
  }
  if (!co_await steps::connect_and_send_first(client, upstream, ctx, *session.policy, name ? &*name : nullptr, targets,
                                              port, inside->bytes, inside->type, guard, plan.sent_up))
    co_return false;
  plan.cut = granted.cut;
  line.take(guard);
  co_return true;
}

// A request to an address (a cidr rule's), or one audit mode lets through, forwarded once
// to a connected `upstream`: its head with Connection: close (http_head::forward_head), so
// a next request comes on a new, judged connection, then what the client sent behind it.
// False when a write failed; else `sent_up` says what went.
asio::awaitable<bool> forward_once(tcp::socket& upstream, const sniffed& request, std::uint64_t& sent_up) {
  const std::span<const std::byte> head(request.bytes.data(), request.head_size);
  const std::span<const std::byte> rest(request.bytes.data() + request.head_size,
                                        request.bytes.size() - request.head_size);
  std::uint64_t up = 0;
  {
    const auto forwarded = http_head::forward_head(head);
    auto [wec, wn] = co_await asio::async_write(upstream, asio::buffer(forwarded), nothrow);
    up += wn;
    if (wec) co_return false;
  }
  if (!rest.empty()) {
    auto [wec, wn] = co_await asio::async_write(upstream, asio::buffer(rest.data(), rest.size()), nothrow);
    up += wn;
    if (wec) co_return false;
  }
  sent_up = up;
  co_return true;
}

// Over 100 lines: steps 1 to 7 read top to bottom, as connection.cpp's judge_and_connect.
// Everything up to the relay (see handle_connection for why the split): true when a
// tunnel or a forwarded request is allowed, `upstream` connected, what the client sent so
// far written on (`plan.sent_up`; plain HTTP's through the gate in `plan`) and the line
// handed to `line`.
asio::awaitable<bool> judge_and_connect(tcp::socket& client, const tcp::endpoint& peer, tcp::socket& upstream,
                                        proxy_context& ctx, limiter::ticket& ticket, record::decision_line& line,
                                        steps::relay_plan& plan) {
  record::decision_record rec;
  rec.event = record::event_kind::connect;
  rec.conn = ctx.conn_ids.next();
  auto guard = steps::connection_line(ctx.log, rec);
  const auto snap = ctx.policies.current();
  rec.policy_version = snap->version();
  // Every answer on this listener is HTTP, whatever the client sent.
  constexpr auto channel = sniffed::kind::http;

  rec.client = steps::text(peer);
  if (const auto over = ticket.refused(); !over.empty()) {
    steps::name_session(ctx, *snap, peer.address(), rec);
    co_await steps::refuse_over_limit(client, channel, guard, over);
    co_return false;
  }

  // 1. Whose traffic this is: by where it comes from, never by what it says (a
  //    Proxy-Authorization header is not identity here).
  const auto registered = ctx.policies.registered();
  const auto session = snap->session_for(peer.address(), registered.get());
  if (!session) {
    rec.reason = policy::snapshot::no_session_reason(peer.address(), registered.get(), &rec.session);
    co_await steps::refuse(client, channel, guard);
    co_return false;
  }
  rec.session = std::string(session->id);
  rec.policy = session->policy->name();
  if (const auto over = steps::admit(ctx, ticket, rec.session); !over.empty()) {
    co_await steps::refuse_over_limit(client, channel, guard, over);
    co_return false;
  }
  steps::start_probe(ctx, guard, client, peer);

  // 2. The proxy request: CONNECT host:port, or an absolute-form http:// request.
  auto first = co_await sniff(client, peek_limit(ctx));
  ticket.judged();
  const bool tunnel = first.type == sniffed::kind::http && first.method == "CONNECT";
  rec.proto = tunnel ? "connect" : "http";
  rec.name = first.name;
  if (first.failure || first.type != sniffed::kind::http || (!tunnel && !first.absolute_form) ||
      (tunnel && !first.port)) {
    rec.reason = first.failure.value_or(reason::parse_error);
    if (!first.failure) rec.notes.push_back("not_a_proxy_request");
    co_await steps::refuse(client, channel, guard);
    co_return false;
  }
  const std::uint16_t port = first.port.value_or(80);
  rec.dst = first.name + ":" + std::to_string(port);

  // 3. Decide: a name by the policy (proxy/judge.hpp), an address only by a cidr rule.
  boost::system::error_code not_address;
  const auto literal = asio::ip::make_address(first.name, not_address);
  auto judge = [&] {
    return judge_proxy_request(first, not_address ? nullptr : &literal, port, tunnel, *session, ctx, rec);
  };
  auto d = judge();
  // A denial for want of a rule may wait for an approver (the client waits for our answer
  // to its CONNECT or request meanwhile).
  if (steps::may_ask_approver(ctx, *session->policy, d))
    co_await steps::ask_approver(client, ctx, *session->policy, guard, port, d, judge);
  auto& name = d.name;
  if (d.verdict == verdict::deny) {
    co_await steps::refuse(client, channel, guard);
    co_return false;
  }

  // 4. Where to connect: airlock's own resolution of the name; an address, if it may be reached.
  std::vector<asio::ip::address> targets{literal};
  if (name) targets = co_await steps::own_resolution(ctx, *session->policy, *name, port, rec);
  if (name ? targets.empty() : !steps::destination_reachable(ctx, *session->policy, literal, port, rec)) {
    co_await steps::refuse(client, channel, guard);
    co_return false;
  }

  // 5. A tunnel: inspected (its TLS served here), or its first bytes judged before anything
  //    goes upstream.
  if (tunnel && name && d.verdict == verdict::allow && d.inspect) {
    const served_target target{*session->policy, *name, port, targets, true};  // named: see connection.cpp
    co_await inspect_tunnel(client, first, target, guard, ctx, ticket);
    co_return false;
  }
  if (tunnel)
    co_return co_await open_tunnel(client, first, d, port, snap, *session, targets, upstream, ctx, ticket, guard, line,
                                   plan);

  // 6. Absolute-form requests to a name, each judged (host, and with inspect method and
  //    path) and sent on in origin-form; one for another host ends the connection with a 403.
  if (name && d.verdict == verdict::allow) {
    served_target target{*session->policy, *name, port, targets, true};
    target.upgrades = d.protocol == policy::port_protocol::any;
    target.log_requests = d.inspect || session->policy->redirects_from(*name);
    target.from_proxy_client = true;
    target.granted = granted_by(d.reason);
    target.cut = d.cut.get();
    co_await serve_plain_http(client, first, target, guard, ctx, ticket);
    co_return false;
  }

  // 7. Connect; a request to an address, or one audit mode lets through, is forwarded once.
  const auto reached = co_await steps::connect_resolved(upstream, ctx, *session->policy, name ? &*name : nullptr,
                                                        targets, port);
  if (!reached) {
    co_await steps::refuse_unreached(client, channel, guard, reached);
    co_return false;
  }
  rec.upstream = steps::text(*reached);
  if (!co_await forward_once(upstream, first, plan.sent_up)) co_return false;
  line.take(guard);
  co_return true;
}

}  // namespace

asio::awaitable<void> handle_explicit_connection(tcp::socket client, tcp::endpoint peer, proxy_context& ctx) {
  return steps::judge_then_relay(std::move(client), peer, ctx, &judge_and_connect);
}

}  // namespace airlock::proxy
