#include "proxy/steps.hpp"

#include "base/spawn.hpp"
#include "proxy/owned_relay.hpp"
#include "proxy/plain_requests.hpp"

#include <cerrno>
#include <cstdio>
#include <exception>
#include <memory>
#include <utility>

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
relay_plan::relay_plan(relay_plan&&) noexcept = default;
relay_plan::~relay_plan() = default;

namespace {

// After the gate refused a request and the upstream answered what went before: the client
// hears the refusal. The ticket goes along: the connection counts as open until then.
asio::awaitable<void> answer_refused(tcp::socket client, std::unique_ptr<plain_requests> requests,
                                     limiter::ticket /*open until answered*/) {
  co_await requests->answer(client);
}

// What a judged connection keeps while relayed (proxy/owned_relay.hpp's Tail).
struct relayed_connection {
  tcp::socket client;
  tcp::socket upstream;
  limiter::ticket ticket;
  record::decision_line line;
  relay_plan plan;

  relay_meter* meter() noexcept { return &ticket; }
  request_gate* gate() noexcept { return plan.requests ? &plan.requests->gate() : nullptr; }
  base::cut_switch* cut() noexcept { return plan.cut.get(); }

  void relayed(const relay_totals& totals) noexcept {
    // The close line leaves before a refused request's answer is written: a shutdown that
    // cuts that write then cannot take the line's byte counts with it.
    line.close(relay_outcome(totals, plan.sent_up, ticket, gate()));
    if (const auto* g = gate(); g == nullptr || g->refused() == 0) return;
    auto report = [](const char* what) { std::fprintf(stderr, "airlock: connection: internal error: %s\n", what); };
    try {  // called as the relay's last wait lets go of it: nothing may escape
      auto executor = client.get_executor();
      base::spawn_session(executor, answer_refused(std::move(client), std::move(plan.requests), std::move(ticket)),
                          report);
    } catch (const std::exception& e) {
      report(e.what());  // the client is closed unanswered; its line has left already
    }
  }
};

}  // namespace

asio::awaitable<void> judge_then_relay(tcp::socket client, tcp::endpoint peer, proxy_context& ctx, judge_fn judge) {
  tcp::socket upstream(client.get_executor());
  // The judge hands `line` the connection's close line.
  relayed_connection c{std::move(client), std::move(upstream), ctx.limits.accept(), record::decision_line(ctx.log), {}};
  if (!co_await judge(c.client, peer, c.upstream, ctx, c.ticket, c.line, c.plan)) co_return;
  relay_owned(std::move(c), idle_limit(ctx));
}

}  // namespace airlock::proxy::steps
