#include "proxy/steps.hpp"

#include "core/deadline.hpp"
#include "dns/lookup.hpp"
#include "policy/special_addresses.hpp"
#include "proxy/relay.hpp"

#include <boost/asio/connect.hpp>
#include <boost/asio/write.hpp>

#include <array>
#include <cerrno>

#include <sys/socket.h>

namespace airlock::proxy::steps {

namespace asio = boost::asio;
using asio::ip::tcp;
using core::nothrow;
using policy::reason;

std::string text(const tcp::endpoint& ep) { return policy::endpoint_config{ep.address(), ep.port()}.to_string(); }

void no_delay(tcp::socket& s) noexcept {
  boost::system::error_code ignored;
  s.set_option(tcp::no_delay(true), ignored);
}

bool peer_gone(tcp::socket& s) noexcept {
  char byte;
  const auto n = ::recv(s.native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
}

emit_once::~emit_once() {
  record.duration_ms = static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started).count());
  attribution::emit_line(sink, record, probe);
}

void start_probe(proxy_context& ctx, emit_once& line, const tcp::endpoint& client, const tcp::endpoint& addressed,
                 asio::any_io_executor ex) {
  if (!ctx.finder || !ctx.netns_of) return;
  line.probe = attribution::probe::start(ctx.finder, ctx.netns_of(line.record.session),
                                         attribution::socket_key::tcp(client, addressed), std::move(ex));
}

asio::awaitable<void> refuse(tcp::socket& client, sniffed::kind channel, emit_once& line) {
  if (line.probe.active()) {
    line.record.process_json = co_await line.probe.json(std::chrono::milliseconds(100));
    line.probe = {};
  }
  const core::decision_record& rec = line.record;
  boost::system::error_code ignored;
  if (channel == sniffed::kind::tls) {
    // Fatal alert access_denied(49) in a TLS 1.2-framed record: every TLS version reads it.
    static constexpr std::array<unsigned char, 7> alert{0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 0x31};
    co_await asio::async_write(client, asio::buffer(alert), nothrow);
    client.shutdown(tcp::socket::shutdown_send, ignored);
  } else if (channel == sniffed::kind::http) {
    const bool upstream_failed = rec.reason == reason::resolve_failed || rec.reason == reason::upstream_unreachable;
    const std::string body = "{\"reason\":" + core::json_quote(policy::to_string(rec.reason)) +
                             ",\"rule\":" + core::json_quote(rec.rule) + ",\"name\":" + core::json_quote(rec.name) +
                             ",\"session\":" + core::json_quote(rec.session) + "}\n";
    std::string response = std::string(upstream_failed ? "HTTP/1.1 502 Bad Gateway" : "HTTP/1.1 403 Forbidden") +
                           "\r\nContent-Type: application/json\r\nConnection: close\r\nX-Airlock-Reason: " +
                           std::string(policy::to_string(rec.reason)) +
                           "\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
    co_await asio::async_write(client, asio::buffer(response), nothrow);
    client.shutdown(tcp::socket::shutdown_send, ignored);
  } else {
    // Opaque TCP has no words for "denied": a reset is the honest answer.
    client.set_option(asio::socket_base::linger(true, 0), ignored);
  }
  client.close(ignored);
}

asio::awaitable<void> refuse_over_limit(tcp::socket& client, sniffed::kind channel, emit_once& line,
                                        std::string_view limit) {
  auto& rec = line.record;
  rec.verdict = policy::verdict::deny;
  rec.reason = reason::limit_exceeded;
  rec.rule = "default";
  rec.notes.push_back("limit:" + std::string(limit));
  co_await refuse(client, channel, line);
}

void cut_by_budget(core::decision_record& rec, std::string_view budget) {
  rec.verdict = policy::verdict::deny;
  rec.reason = reason::limit_exceeded;
  rec.rule = "default";
  rec.notes.push_back("limit:" + std::string(budget));
  rec.notes.push_back("cut_open_connection");
}

asio::awaitable<std::vector<asio::ip::address>> own_resolution(proxy_context& ctx, const policy::compiled_policy& p,
                                                               const policy::domain_name& name, std::uint16_t port,
                                                               core::decision_record& rec) {
  std::vector<asio::ip::address> targets;
  auto resolved = co_await dns::lookup_addresses(ctx.resolver, ctx.cache, name);
  if (!resolved.has_value() || resolved->empty()) {
    rec.reason = reason::resolve_failed;
    if (!resolved.has_value()) rec.notes.push_back("upstream_" + std::string(dns::to_string(resolved.error())));
    co_return targets;
  }
  for (const auto& a : *resolved)
    if (!policy::is_special(policy::classify(a)) || p.cidr_allowance(a, port)) targets.push_back(a);
  if (targets.empty()) {
    // Never softened by audit mode: watching a workload must not open the metadata
    // service or the internal network to it.
    rec.verdict = policy::verdict::deny;
    rec.reason = reason::private_address;
    rec.rule = "default";  // the special-address floor decided, not the allow rule
  }
  co_return targets;
}

asio::awaitable<void> relay_to_end(tcp::socket& client, tcp::socket& upstream, proxy_context& ctx,
                                   limiter::ticket& ticket, std::uint64_t sent_up, core::decision_record& rec) {
  const auto totals = co_await relay(client, upstream, ctx.settings.idle_limit, &ticket);
  rec.bytes_up = sent_up + totals.up;
  rec.bytes_down = totals.down;
  if (totals.idle_timeout) rec.notes.push_back("idle_timeout");
  if (totals.cut) cut_by_budget(rec, ticket.spent());
}

asio::awaitable<bool> connect_any(tcp::socket& upstream, const std::vector<asio::ip::address>& addresses,
                                  std::uint16_t port, std::chrono::steady_clock::duration limit) {
  std::vector<tcp::endpoint> endpoints;
  for (const auto& a : addresses) endpoints.emplace_back(a, port);
  auto attempt = [&]() -> asio::awaitable<bool> {
    auto [ec, ep] = co_await asio::async_connect(upstream, endpoints, nothrow);
    if (!ec) no_delay(upstream);
    co_return !ec;
  };
  auto ok = co_await core::with_deadline(attempt(), limit);
  co_return ok && *ok;
}

}  // namespace airlock::proxy::steps
