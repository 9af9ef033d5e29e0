#include "proxy/steps.hpp"

#include "proxy/plain_requests.hpp"
#include "proxy/relay.hpp"

#include <cerrno>

#include <sys/socket.h>

namespace airlock::proxy::steps {

namespace asio = boost::asio;
using asio::ip::tcp;

std::string text(const tcp::endpoint& ep) { return policy::endpoint_config{ep.address(), ep.port()}.to_string(); }

void name_session(const proxy_context& ctx, const policy::snapshot& snap, const boost::asio::ip::address& peer,
                  record::decision_record& rec) {
  if (const auto s = snap.session_for(peer, ctx.policies.registered().get())) {
    rec.session = std::string(s->id);
    rec.policy = s->policy->name();
  }
}

bool peer_gone(tcp::socket& s) noexcept {
  char byte;
  const auto n = ::recv(s.native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
}

void start_probe(proxy_context& ctx, record::decision_line& line, tcp::socket& accepted, const tcp::endpoint& client,
                 std::optional<tcp::endpoint> addressed) {
  const std::string netns = ctx.finder && ctx.netns_of ? ctx.netns_of(line.record().session) : std::string();
  if (netns.empty()) return;
  if (!addressed) {
    boost::system::error_code ec;
    addressed = accepted.local_endpoint(ec);
    if (ec) return;
  }
  line.probe = attribution::probe::start(ctx.finder, netns, attribution::socket_key::tcp(client, *addressed),
                                         accepted.get_executor());
}

std::string_view admit(proxy_context& ctx, limiter::ticket& ticket, const std::string& session) {
  if (ctx.settings.refuse_when_unrecorded && !ctx.log.recording()) return "decision_log";
  if (ctx.overload != nullptr && ctx.overload->refusing()) return "memory";
  return ticket.admit(session);
}

record::close_facts relay_outcome(const relay_totals& totals, std::uint64_t sent_up, const limiter::ticket& ticket,
                                  const request_gate* gate) {
  record::close_facts facts{.bytes_up = totals.up + sent_up, .bytes_down = totals.down};
  // Allowed requests have no lines of their own: the connection's close line counts them.
  if (gate) facts.notes.push_back("requests:" + std::to_string(gate->requests()));
  if (totals.idle_timeout) facts.notes.push_back("idle_timeout");
  if (totals.reset == reset_by::client) facts.notes.push_back("client_reset");
  if (totals.reset == reset_by::upstream) facts.notes.push_back("upstream_reset");
  facts.cut = totals.cut;
  facts.grant_ended = totals.grant_ended;
  if (totals.cut) facts.budget = ticket.spent();
  return facts;
}

relay_plan::relay_plan() = default;
relay_plan::~relay_plan() = default;

asio::awaitable<void> judge_then_relay(tcp::socket client, tcp::endpoint peer, proxy_context& ctx, judge_fn judge) {
  auto ticket = ctx.limits.accept();
  record::decision_line line(ctx.log);  // the judge hands it the connection's close line
  tcp::socket upstream(client.get_executor());
  relay_plan plan;
  if (!co_await judge(client, peer, upstream, ctx, ticket, line, plan)) co_return;
  auto* gate = plan.requests ? &plan.requests->gate() : nullptr;
  const auto totals = co_await relay(client, upstream, idle_limit(ctx), &ticket, gate, plan.cut.get());
  // The close line leaves before a refused request's answer is written: a shutdown that cuts
  // that write then cannot take the line's byte counts with it.
  line.close(relay_outcome(totals, plan.sent_up, ticket, gate));
  if (gate && gate->refused() != 0) co_await plan.requests->answer(client);
}

}  // namespace airlock::proxy::steps
