// Refusals in the channel's language (proxy/refusals.hpp).
#include "proxy/refusals.hpp"

#include "base/deadline.hpp"
#include "proxy/own_socket.hpp"
#include "proxy/steps.hpp"
#include "proxy/upstream_connect.hpp"

#include <boost/asio/write.hpp>

#include <array>

namespace airlock::proxy::steps {

namespace asio = boost::asio;
using asio::ip::tcp;
using base::nothrow;
using policy::reason;

asio::awaitable<void> refuse(tcp::socket& client, sniffed::kind channel, record::decision_line& line) {
  if (line.probe.active()) {
    line.record().process_json = co_await line.probe.json(std::chrono::milliseconds(100));
    line.probe = {};
  }
  const record::decision_record& rec = line.record();
  boost::system::error_code ignored;
  if (channel == sniffed::kind::tls) {
    // Fatal alert access_denied(49) in a TLS 1.2-framed record: every TLS version reads it.
    static constexpr std::array<unsigned char, 7> alert{0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 0x31};
    co_await asio::async_write(client, asio::buffer(alert), nothrow);
    client.shutdown(tcp::socket::shutdown_send, ignored);
  } else if (channel == sniffed::kind::http) {
    const bool upstream_failed = rec.reason == reason::resolve_failed || rec.reason == reason::upstream_unreachable;
    const auto response = refusal_response(upstream_failed ? 502 : 403, rec);
    co_await asio::async_write(client, asio::buffer(response), nothrow);
    client.shutdown(tcp::socket::shutdown_send, ignored);
  } else {
    // Opaque TCP has no words for "denied": a reset is the honest answer.
    close_with_reset(client);
  }
  client.close(ignored);
}

asio::awaitable<void> refuse_over_limit(tcp::socket& client, sniffed::kind channel, record::decision_line& line,
                                        std::string_view limit) {
  auto& rec = line.record();
  rec.verdict = policy::verdict::deny;
  rec.reason = reason::limit_exceeded;
  rec.rule = "default";
  rec.notes.push_back("limit:" + std::string(limit));
  co_await refuse(client, channel, line);
}

void log_refused_at_accept(proxy_context& ctx, const tcp::endpoint& client, std::string_view limit) {
  record::decision_record rec;
  rec.event = record::event_kind::connect;
  rec.conn = ctx.conn_ids.next();
  const auto snap = ctx.policies.current();
  rec.policy_version = snap->version();
  rec.client = text(client);
  name_session(ctx, *snap, client.address(), rec);
  rec.verdict = policy::verdict::deny;
  rec.reason = reason::limit_exceeded;
  rec.rule = "default";
  rec.notes.push_back("limit:" + std::string(limit));
  const auto line = connection_line(ctx.log, rec);
}

asio::awaitable<void> refuse_unreached(tcp::socket& client, sniffed::kind channel, record::decision_line& line,
                                       const upstream_reached& r) {
  if (r.out_of_descriptors) {
    co_await refuse_over_limit(client, channel, line, "open_files");
    co_return;
  }
  line.record().reason = reason::upstream_unreachable;
  co_await refuse(client, channel, line);
}

}  // namespace airlock::proxy::steps
