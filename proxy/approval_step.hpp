#pragma once
// A connection's wait for an approver (record/approval_desk.hpp): in a policy with
// `approval:`, a connection denied for want of a rule (host_not_allowed, port_not_allowed)
// is held, its client told nothing, until an approver answers, the wait passes, or the
// client leaves. When the answer allows, the connection is judged again and finds the grant
// the answer made. Between sniff and connect in both listeners' coroutines.
#include "proxy/connection.hpp"
#include "proxy/judge.hpp"
#include "record/decision_line.hpp"

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <cstdint>
#include <functional>

namespace airlock::proxy::steps {

// Whether `d` is a denial to hold for `policy` (an approval wait, an approval desk, a
// grantable reason).
bool may_ask_approver(const proxy_context& ctx, const policy::compiled_policy& policy, const judgement& d) noexcept;

// Holds the connection (may_ask_approver must be true); on an allow, `d` becomes what
// `judge_again` says. The line's notes say what happened (record::note_approval), and the
// process behind the connection is looked up first, for the approver to see.
boost::asio::awaitable<void> ask_approver(boost::asio::ip::tcp::socket& client, proxy_context& ctx,
                                          const policy::compiled_policy& policy, record::decision_line& line,
                                          std::uint16_t port, judgement& d,
                                          const std::function<judgement()>& judge_again);

}  // namespace airlock::proxy::steps
