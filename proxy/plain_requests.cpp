#include "proxy/plain_requests.hpp"

#include "base/deadline.hpp"
#include "proxy/judge.hpp"
#include "proxy/refusals.hpp"
#include "proxy/upstream_connect.hpp"
#include "record/decision_line.hpp"
#include "record/packed.hpp"

#include <boost/asio/write.hpp>

#include <utility>

namespace airlock::proxy {

namespace asio = boost::asio;
using asio::ip::tcp;
using base::nothrow;
using policy::reason;
using policy::verdict;

plain_requests::plain_requests(proxy_context& ctx, std::shared_ptr<const policy::compiled_policy> policy,
                               const served_target& t, std::string_view granted_rule,
                               const record::decision_record& connection)
    : ctx_(ctx),
      policy_(std::move(policy)),
      name_(t.name),
      port_(t.port),
      granted_(t.granted),
      granted_rule_(granted_rule),
      cut_(t.cut) {
  connected(connection);
}

void plain_requests::connected(const record::decision_record& connection) {
  record::decision_record shared;
  shared.session = connection.session;
  shared.client = connection.client;
  shared.dst = connection.dst;
  shared.upstream = connection.upstream;
  shared.conn = connection.conn;
  shared.policy = connection.policy;
  shared.policy_version = connection.policy_version;
  connection_ = record::pack(shared);
}

record::decision_record plain_requests::line_for() const {
  auto rec = record::unpack(connection_);
  rec.event = record::event_kind::http;
  rec.proto = "http";
  return rec;
}

unsigned plain_requests::refused(record::decision_record rec, unsigned status) {
  rec.verdict = verdict::deny;
  rec.status = status;
  record::decision_line::write(ctx_.log, rec);
  refusal_ = std::make_unique<record::decision_record>(std::move(rec));
  return status;
}

unsigned plain_requests::request(const http_head::request& r, std::uint64_t number) {
  const request_scope scope{*policy_, name_, port_, false, false, granted_, granted_rule_, cut_};
  const auto j = judge_request(r, scope, number, plain_host_);
  if (j.verdict == verdict::allow) return 0;  // the connection's line stands for it
  auto rec = line_for();
  rec.method = r.method;
  rec.path = r.target;
  rec.name = r.host;
  rec.reason = j.reason;
  rec.rule = std::string(j.rule);
  if (!j.note.empty()) rec.notes.push_back(j.note);
  if (j.verdict == verdict::audit_deny) {  // passes, but with a line of its own
    rec.verdict = j.verdict;
    record::decision_line::write(ctx_.log, rec);
    return 0;
  }
  return refused(std::move(rec), j.refusal);
}

unsigned plain_requests::refuse(request_gate::unframed why, const http_head::request* head, std::uint64_t) {
  auto rec = line_for();
  if (head != nullptr) {
    rec.method = head->method;
    rec.path = head->target;
    rec.name = head->host;
  }
  rec.reason = why == request_gate::unframed::head_too_large ? reason::too_large : reason::parse_error;
  if (why == request_gate::unframed::ambiguous_framing) rec.notes.push_back("ambiguous_framing");
  if (why == request_gate::unframed::malformed_chunk) rec.notes.push_back("malformed_chunk");
  return refused(std::move(rec), 400);
}

asio::awaitable<void> plain_requests::answer(tcp::socket& client) {
  if (!refusal_) co_return;
  const auto response = steps::refusal_response(refusal_->status.value_or(403), *refusal_);
  co_await asio::async_write(client, asio::buffer(response), nothrow);
  boost::system::error_code ignored;
  client.shutdown(tcp::socket::shutdown_send, ignored);
  client.close(ignored);
}

bool served_not_relayed(const served_target& t) noexcept { return t.log_requests || t.upgrades || t.from_proxy_client; }

asio::awaitable<bool> start_judged_relay(tcp::socket& client, std::span<const std::byte> first, const served_target& t,
                                         std::shared_ptr<const policy::compiled_policy> policy, tcp::socket& upstream,
                                         proxy_context& ctx, record::decision_line& guard, record::decision_line& line,
                                         steps::relay_plan& plan) {
  auto& rec = guard.record();
  rec.notes.push_back("requests_judged");
  plan.requests = std::make_unique<plain_requests>(ctx, std::move(policy), t, rec.rule, rec);
  auto& gate = plan.requests->gate();
  const auto admitted = gate.admit(first);
  if (gate.refused() != 0 && admitted.empty()) {
    guard.decide();  // the connection was allowed; its first request was not
    co_await plan.requests->answer(client);
    rec.notes.push_back("requests:0");
    co_return false;
  }
  if (!co_await steps::connect_and_send_first(client, upstream, ctx, t.policy, &t.name, t.addresses, t.port, admitted,
                                              sniffed::kind::http, guard, plan.sent_up))
    co_return false;
  gate.passed();
  plan.requests->connected(rec);
  line.take(guard);
  co_return true;
}

}  // namespace airlock::proxy
