#include "proxy/connection.hpp"

#include "base/deadline.hpp"
#include "policy/special_addresses.hpp"
#include "proxy/approval_step.hpp"
#include "proxy/judge.hpp"
#include "proxy/original_dst.hpp"
#include "proxy/plain_requests.hpp"
#include "proxy/relay.hpp"
#include "proxy/served_connection.hpp"
#include "proxy/sniff.hpp"
#include "proxy/steps.hpp"

#include <boost/asio/write.hpp>

#include <algorithm>

namespace airlock::proxy {
namespace {

namespace asio = boost::asio;
using asio::ip::tcp;
using base::nothrow;
using policy::reason;
using policy::verdict;
using steps::refuse;
using steps::refuse_over_limit;
using steps::text;

// Over 100 lines: steps 1 to 7 read top to bottom, as docs/architecture.md lists them.
// Steps 1 to 7 of handle_connection: everything up to the relay. True when the connection
// is allowed, `upstream` connected, the client's first bytes sent on (`plan.sent_up`; a
// plain-HTTP connection's through the gate in `plan`) and the line handed to `line`; false
// when it was refused or served to its end here.
template <interception how>
asio::awaitable<bool> judge_and_connect(tcp::socket& client, const tcp::endpoint& peer, tcp::socket& upstream,
                                        proxy_context& ctx, limiter::ticket& ticket, record::decision_line& line,
                                        steps::relay_plan& plan) {
  record::decision_record rec;
  rec.event = record::event_kind::connect;
  rec.conn = ctx.conn_ids.next();
  auto guard = steps::connection_line(ctx.log, rec);
  const auto snap = ctx.policies.current();
  rec.policy_version = snap->version();

  rec.client = text(peer);
  if (const auto over = ticket.refused(); !over.empty()) {
    // Whose connection was refused matters most here: a daemon-wide cap is what one
    // session's flood makes the others meet.
    steps::name_session(ctx, *snap, peer.address(), rec);
    co_await refuse_over_limit(client, sniffed::kind::unknown, guard, over);
    co_return false;
  }

  // 1. Where the client meant to go. Without it there is no port to judge.
  const auto dst = original_dst(client, peer, how);
  if (!dst.has_value()) {
    // Usually a client that gave up before the accept (its conntrack entry went with
    // it): not airlock's fault, and it should not read like one.
    if (steps::peer_gone(client)) {
      rec.reason = reason::truncated;
      rec.notes.push_back("client_gone_before_accept");
    } else {
      rec.reason = reason::internal_error;
      rec.notes.push_back("no_original_destination");
    }
    steps::name_session(ctx, *snap, peer.address(), rec);
    co_await refuse(client, sniffed::kind::unknown, guard);
    co_return false;
  }
  rec.dst = text(*dst);
  const std::uint16_t port = dst->port();

  // 2. Whose traffic this is: decided by where it enters, never by what it says.
  const auto registered = ctx.policies.registered();
  const auto session = snap->session_for(peer.address(), registered.get());
  if (!session) {
    rec.reason = policy::snapshot::no_session_reason(peer.address(), registered.get(), &rec.session);
    co_await refuse(client, sniffed::kind::unknown, guard);
    co_return false;
  }
  rec.session = std::string(session->id);
  rec.policy = session->policy->name();
  if (const auto over = steps::admit(ctx, ticket, rec.session); !over.empty()) {
    co_await refuse_over_limit(client, sniffed::kind::unknown, guard, over);
    co_return false;
  }
  steps::start_probe(ctx, guard, client, peer, *dst);

  // 3. What it says: SNI or Host, within the peek deadline.
  auto first = co_await sniff(client, peek_limit(ctx), ctx.settings.quiet_limit);
  ticket.judged();
  if (first.silent) rec.notes.push_back("client_silent");
  rec.proto = first.type == sniffed::kind::tls ? "tls" : first.type == sniffed::kind::http ? "http" : "tcp";
  if (!first.name.empty()) rec.name = first.name;
  if (first.ech) rec.notes.push_back("ech_outer_sni");
  // 4. Decide (proxy/judge.hpp); a denial for want of a rule may wait for an approver.
  auto judge = [&] {
    return judge_transparent(first, dst->address(), port, session->id, *session->policy, ctx.names,
                             {ctx.grants, ctx.session_grants}, dns::name_table::clock::now());
  };
  auto d = judge();
  if (!d.logged_name.empty()) rec.name = d.logged_name;
  if (steps::may_ask_approver(ctx, *session->policy, d)) {
    rec.verdict = d.verdict;
    rec.reason = d.reason;
    rec.rule = d.rule;
    co_await steps::ask_approver(client, ctx, *session->policy, guard, port, d, judge);
  }
  if (!d.logged_name.empty()) rec.name = std::move(d.logged_name);
  for (auto& note : d.notes) rec.notes.push_back(std::move(note));
  auto& name = d.name;
  rec.verdict = d.verdict;
  rec.reason = d.reason;
  rec.rule = d.rule;
  if (d.verdict == verdict::deny) {
    co_await refuse(client, first.type, guard);
    co_return false;
  }

  // 5. Where to connect: airlock's own resolution of the name, never the client's choice.
  std::vector<asio::ip::address> targets;
  if (name) {
    // The client's own address family first: over IPv6 it is compared with the name's AAAA
    // records, not called a mismatch (and moved to IPv4) because the name also has A records.
    const auto& to = dst->address();
    const bool v6 = to.is_v6() && !to.to_v6().is_v4_mapped();
    targets = co_await steps::own_resolution(ctx, *session->policy, *name, port, rec,
                                             v6 ? dns::ask_first::aaaa : dns::ask_first::a);
    if (targets.empty()) {
      co_await refuse(client, first.type, guard);
      co_return false;
    }
    if (std::find(targets.begin(), targets.end(), dst->address()) == targets.end() && rec.verdict == verdict::allow)
      rec.reason = reason::dst_mismatch;  // SNI/Host spoofing reaches only the real host
  } else {
    if (!steps::destination_reachable(ctx, *session->policy, dst->address(), port, rec)) {
      co_await refuse(client, first.type, guard);
      co_return false;
    }
    targets.push_back(dst->address());
  }

  // 6. Connections airlock serves itself: TLS it terminates for an inspecting rule, and
  //    plain HTTP whose every request must be judged (or whose redirects are followed).
  if (name && d.verdict == verdict::allow) {
    const bool agrees = rec.reason != reason::dst_mismatch;
    // A named target, not a temporary in the co_await: GCC 12 destroys such temporaries twice.
    const served_target target{*session->policy, *name, port, targets, agrees};
    if (first.type == sniffed::kind::tls && d.inspect) {
      co_await serve_inspected(client, first, target, guard, ctx, ticket);
      co_return false;
    }
    if (first.type == sniffed::kind::http) {
      // Every request of a plain connection is judged, not only its first: a later one
      // naming another host on a shared address would reach another tenant.
      served_target plain = target;
      plain.upgrades = d.protocol == policy::port_protocol::any;
      plain.log_requests = d.inspect || session->policy->redirects_from(*name);
      plain.granted = granted_by(d.reason);
      plain.cut = d.cut.get();
      plan.cut = d.cut;
      if (!served_not_relayed(plain)) {
        // Named, not a temporary in the co_await (GCC 12 destroys those twice).
        std::shared_ptr<const policy::compiled_policy> judging(snap, session->policy);
        co_return co_await start_judged_relay(client, first.bytes, plain, std::move(judging), upstream, ctx, guard,
                                              line, plan);
      }
      co_await serve_plain_http(client, first, plain, guard, ctx, ticket);
      co_return false;
    }
  }

  // 7. Connect; the client's first bytes go first (most often with the connect's check).
  if (!co_await steps::connect_and_send_first(client, upstream, ctx, *session->policy, name ? &*name : nullptr, targets,
                                              port, first.bytes, sniffed::kind::unknown, guard, plan.sent_up))
    co_return false;
  plan.cut = std::move(d.cut);
  line.take(guard);
  co_return true;
}

}  // namespace

// A connection's life: judged and connected by judge_and_connect, then relayed. The split
// is for memory: GCC keeps every local of a coroutine in its frame until the coroutine
// ends, and judging needs the sniffed bytes, the policy snapshot, the decision, the
// resolution and the full record (a 2.4 KiB frame); an idle relayed connection keeps only
// the relay, which owns the sockets, the ticket and the packed line (proxy/owned_relay.hpp).
asio::awaitable<void> handle_connection(tcp::socket client, tcp::endpoint peer, proxy_context& ctx) {
  // 8. Relayed in steps::judge_then_relay (shared with the explicit listener).
  return steps::judge_then_relay(std::move(client), peer, ctx, &judge_and_connect<interception::redirect>);
}

asio::awaitable<void> handle_tproxy_connection(tcp::socket client, tcp::endpoint peer, proxy_context& ctx) {
  return steps::judge_then_relay(std::move(client), peer, ctx, &judge_and_connect<interception::tproxy>);
}

}  // namespace airlock::proxy
