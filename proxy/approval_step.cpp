#include "proxy/approval_step.hpp"

#include "base/deadline.hpp"
#include "policy/grant_check.hpp"
#include "record/approval_desk.hpp"

#include <boost/asio/experimental/awaitable_operators.hpp>

namespace airlock::proxy::steps {

namespace asio = boost::asio;

bool may_ask_approver(const proxy_context& ctx, const policy::compiled_policy& policy, const judgement& d) noexcept {
  return d.verdict == policy::verdict::deny && ctx.approvals != nullptr && policy.approval_wait() &&
         policy::grantable(d.reason);
}

asio::awaitable<void> ask_approver(asio::ip::tcp::socket& client, proxy_context& ctx,
                                   const policy::compiled_policy& policy, record::decision_line& line,
                                   std::uint16_t port, judgement& d, const std::function<judgement()>& judge_again) {
  auto& rec = line.record();
  if (line.probe.active()) {
    rec.process_json = co_await line.probe.json(std::chrono::milliseconds(100));
    line.probe = {};
  }
  // The client has sent what it sends before an answer (a ClientHello, a request): the
  // socket turns readable when it gives up (FIN or RST), and the hold ends with it.
  using namespace asio::experimental::awaitable_operators;
  auto got = co_await (ctx.approvals->hold(ctx.approvals->question_for(rec, port, *policy.approval_wait())) ||
                       client.async_wait(asio::ip::tcp::socket::wait_read, base::nothrow));
  if (got.index() == 1) {
    rec.notes.push_back("client_left_while_held");
    co_return;
  }
  if (!record::note_approval(rec, std::get<0>(got))) co_return;
  auto again = judge_again();
  if (again.verdict == policy::verdict::deny) {
    // The answer's grant was taken by another connection held with this one (allow-once).
    rec.reason = again.reason;
    co_return;
  }
  d = std::move(again);
}

}  // namespace airlock::proxy::steps
