#include "proxy/http_exchange.hpp"

#include "base/deadline.hpp"
#include "proxy/http_bodies.hpp"
#include "proxy/http_head.hpp"
#include "proxy/http_message_steps.hpp"
#include "proxy/judge.hpp"
#include "proxy/refusals.hpp"
#include "proxy/secret_mask.hpp"
#include "proxy/served_streams.hpp"

#include <boost/asio/ssl/error.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/stream_traits.hpp>
#include <boost/beast/http/buffer_body.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/serializer.hpp>
#include <boost/beast/http/write.hpp>

#include <optional>
#include <span>
#include <string>
#include <variant>

namespace airlock::proxy {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using base::nothrow;
using policy::reason;
using policy::verdict;
using http_message_steps::bodiless;
using http_message_steps::expects_continue;
using http_message_steps::follow_redirect;
using http_message_steps::judge_one;
using http_message_steps::put_credential;
using http_message_steps::request_record;
using http_message_steps::response_passes;
using http_message_steps::take_request_head;
using http_message_steps::to_origin_form;

// What a read buffer may hold: a head, and what Beast reads ahead of a body piece. A chunk
// line or trailer section that does not fit fails the read (Beast has no limit of its own).
constexpr std::size_t buffer_limit = http_head::default_max_size + 2 * http_bodies::piece_size;

bool is_timeout(const boost::system::error_code& ec) { return ec == beast::error::timeout; }

// A request head read whole, or why not.
struct head_read {
  std::optional<http_head::result> parsed;  // nullopt: the client closed or went quiet first
  bool timed_out = false;
  bool any_bytes = false;  // something of a request had arrived (a truncated request, not an idle close)
};

template <typename Stream>
asio::awaitable<head_read> read_head(Stream& s, beast::flat_buffer& buf) {
  head_read out;
  for (;;) {
    if (buf.size() > 0) {
      out.any_bytes = true;
      const auto* data = static_cast<const std::byte*>(buf.data().data());
      auto r = http_head::parse(std::span(data, buf.size()));
      if (!std::holds_alternative<http_head::need_more>(r)) {
        out.parsed = std::move(r);
        co_return out;
      }
    }
    // parse() gives up at its cap, so the buffer never grows past it and one read.
    auto [ec, n] = co_await s.async_read_some(buf.prepare(4096), nothrow);
    if (ec) {
      out.timed_out = is_timeout(ec);
      co_return out;
    }
    buf.commit(n);
  }
}

// A refusal on a served connection (steps::refusal_response), its status on the request's
// line: the next request comes on a new, separately judged connection.
template <typename Stream>
asio::awaitable<void> answer_refusal(Stream& s, unsigned status, record::decision_record& rec) {
  rec.status = status;
  const auto response = steps::refusal_response(status, rec);
  co_await asio::async_write(s, asio::buffer(response), nothrow);
}

// No request head came whole: the client is done or went quiet between requests (no
// request, no line; a clean end), or it stopped partway (a line: timeout or truncated).
bool ended_between_requests(const head_read& head, record::decision_record& rec, record::decision_sink& log) {
  if (!head.any_bytes) return true;
  rec.reason = head.timed_out ? reason::timeout : reason::truncated;
  record::decision_line::write(log, rec);
  return false;
}

// Writes a message's head to `to`, then (`with_body`) its body as it arrives from `from`
// (http_bodies::relay_body), counting the bytes into `moved` and the session's budget.
// False when a write failed or the budget ran out (`cut`).
template <bool IsRequest, typename From, typename To>
asio::awaitable<bool> pass_message(From& from, beast::flat_buffer& buf, http::parser<IsRequest, http::buffer_body>& p,
                                   To& to, bool with_body, const secret_mask& mask,
                                   std::chrono::steady_clock::duration idle, std::uint64_t& moved,
                                   limiter::ticket& ticket, bool& cut) {
  http::serializer<IsRequest, http::buffer_body> sr{p.get()};
  auto [ec, n] = co_await http::async_write_header(to, sr, nothrow);
  moved += n;
  if (ec || !ticket.moved(IsRequest, n)) {
    cut = !ec;
    co_return false;
  }
  if (!with_body) co_return true;
  co_return co_await http_bodies::relay_body(from, buf, p, to, sr, mask, idle, moved, ticket, cut);
}

// The response's head, read into a new `parser` each time: informational responses (1xx
// but 101) are passed on to the client as they come, masked. False when no final head
// came (`rec` notes upstream_timeout, upstream_closed or upstream_malformed) or the client
// could not be written to.
template <typename Client, typename Upstream>
asio::awaitable<bool> read_response_head(Upstream& upstream, beast::flat_buffer& from_upstream,
                                         std::optional<http::response_parser<http::buffer_body>>& parser,
                                         bool head_request, Client& client, const secret_mask& mask,
                                         std::uint64_t& down, record::decision_record& rec) {
  for (;;) {
    auto& res = parser.emplace();
    res.header_limit(static_cast<std::uint32_t>(http_head::default_max_size));
    res.body_limit(boost::none);
    if (head_request) res.skip(true);
    auto [ec, n] = co_await http::async_read_header(upstream, from_upstream, res, nothrow);
    if (ec) {
      rec.notes.push_back(is_timeout(ec) ? "upstream_timeout"
                          : ec == http::error::end_of_stream || ec == asio::ssl::error::stream_truncated
                              ? "upstream_closed"
                              : "upstream_malformed");
      co_return false;
    }
    const auto code = res.get().result_int();
    if (code < 100 || code >= 200 || code == 101) co_return true;
    mask_fields(res.get().base(), mask);
    http::response_serializer<http::buffer_body> info{res.get()};
    auto [wec, wn] = co_await http::async_write_header(client, info, nothrow);
    down += wn;
    if (wec) co_return false;
  }
}

// A 101 that switches to what a WebSocket upgrade asked for.
bool to_websocket(const http::response_header<>& res) { return beast::iequals(res[http::field::upgrade], "websocket"); }

}  // namespace

// Over 100 lines: each request's record and line live in this one loop, which takes the
// request's steps in order (the helpers above); every step that ends the connection returns.
template <typename Client, typename Upstream>
asio::awaitable<exchange_totals> serve_requests(Client& client, Upstream& upstream, exchange_setup& x) {
  exchange_totals totals;
  beast::flat_buffer from_client{buffer_limit}, from_upstream{buffer_limit};
  auto& client_tcp = beast::get_lowest_layer(client);
  auto& upstream_tcp = beast::get_lowest_layer(upstream);
  const auto idle = x.idle;
  // Every credential put on a request of this connection: an echo is masked in any later
  // response too, whichever request it seems to answer.
  secret_mask mask;
  const secret_mask no_mask;  // requests carry no echo; named, not a temporary in a co_await

  // Plain HTTP: the host the first request named, as written (lower-cased) with its port.
  // That request was judged with the connection (by its Host, or by the address a DNS
  // answer bound); every later one must name the same.
  std::string plain_host;

  for (;; ++totals.requests) {
    auto rec = request_record(x.connection);
    totals.clean = false;

    // 1. The request head, within the idle limit (a client may open a connection ahead of use).
    client_tcp.expires_after(idle);
    auto head = co_await read_head(client, from_client);
    if (!head.parsed) {
      totals.clean = ended_between_requests(head, rec, x.log);
      co_return totals;
    }
    // The request's line, timed from here: written on every way out of this request.
    record::decision_line line(x.log, rec, record::decision_line::timing::at_exit);
    http::request_parser<http::buffer_body> req;
    const auto* req_head = take_request_head(*head.parsed, from_client, req, rec);
    if (req_head == nullptr) {
      co_await answer_refusal(client, 400, rec);
      co_return totals;
    }
    const auto target = http_head::origin_target(req_head->target, req_head->absolute_form);

    // 2. Judge it: the connection's name, then the rule's methods and paths.
    const auto d = judge_one(*req_head, x, totals.requests, plain_host, rec);
    if (d.verdict == verdict::deny) {
      co_await answer_refusal(client, d.refusal, rec);
      co_return totals;
    }
    // The connection's line stands for an ordinary allowed request; a switch is logged.
    if (!x.log_allowed && d.verdict == verdict::allow && !d.switching) line.cancel();

    // 3. What the origin gets: origin-form for a proxy's client, and a credential.
    if (x.from_proxy_client) to_origin_form(req.get(), target);
    put_credential(req.get(), x, target, mask, rec);
    if (d.websocket && !mask.empty()) {
      // After the switch the frames pass unread: an echo of a credential could not be masked.
      rec.verdict = verdict::deny;
      rec.reason = reason::protocol_not_allowed;
      rec.notes.push_back("websocket_with_credential");
      co_await answer_refusal(client, 403, rec);
      co_return totals;
    }

    // 4. Forward the request. A client waiting for 100 Continue hears it from airlock, now
    //    that the request is allowed: the body then flows straight through.
    upstream_tcp.expires_after(idle);
    client_tcp.expires_after(idle);
    if (expects_continue(req.get())) {
      static constexpr std::string_view go_on = "HTTP/1.1 100 Continue\r\n\r\n";
      if (auto [ec, n] = co_await asio::async_write(client, asio::buffer(go_on), nothrow); ec) co_return totals;
    }
    const bool head_request = req_head->method == "HEAD";
    const bool client_keeps_alive = req.keep_alive();
    std::uint64_t up = 0, down = 0;
    auto account = [&] {
      rec.bytes_up = up;
      rec.bytes_down = down;
      totals.up += up;
      totals.down += down;
      if (totals.cut) record::mark_cut(rec, x.ticket.spent());
    };
    if (!co_await pass_message(client, from_client, req, upstream, true, no_mask, idle, up, x.ticket, totals.cut)) {
      account();
      co_return totals;
    }

    // 5. The response's head: informational ones pass on.
    std::optional<http::response_parser<http::buffer_body>> parser;
    upstream_tcp.expires_after(idle);
    if (!co_await read_response_head(upstream, from_upstream, parser, head_request, client, mask, down, rec)) {
      account();
      co_return totals;
    }
    auto& res = *parser;
    const auto status = res.get().result_int();
    rec.status = status;

    // 6. Judge the response: its framing, an echo of a credential; a redirect may grant a
    //    one-shot allowance; a switch of protocols is followed only where the port allows it.
    if (!response_passes(res.get().base(), status, head_request, mask, rec)) {
      co_await answer_refusal(client, 502, rec);
      account();
      co_return totals;
    }
    const bool switched = status == 101 && d.switching &&
                          (d.websocket ? to_websocket(res.get().base()) : x.upgrades && !x.tls);
    if (status == 101) rec.notes.push_back(switched ? "upgraded" : "upgrade_refused");
    if (switched && d.websocket) rec.notes.push_back("websocket");
    if (status >= 300 && status < 400 && x.grants != nullptr) follow_redirect(res.get().base(), x, rec);
    const bool upstream_keeps_alive = res.keep_alive();

    // 7. Pass the response on. No body after some, whatever the headers say: a chunked
    //    serializer would add one.
    if (!co_await pass_message(upstream, from_upstream, res, client, !bodiless(status, head_request), mask, idle, down,
                               x.ticket, totals.cut)) {
      account();
      co_return totals;
    }

    // 8. After a 101 the bytes go both ways as they come, until the connection ends: the
    //    request's line leaves now, at the switch (the connection's close line has the bytes).
    if (switched) {
      rec.bytes_up = up;
      rec.bytes_down = down;
      line.decide();
      line.cancel();
      co_await http_bodies::relay_switched(client, from_client, upstream, from_upstream, idle, up, down, x.ticket,
                                           totals.cut);
    }
    account();
    totals.clean = true;
    if (status == 101 || !client_keeps_alive || !upstream_keeps_alive) {
      ++totals.requests;
      co_return totals;
    }
  }
}

template asio::awaitable<exchange_totals> serve_requests(served_client_tls&, served_upstream_tls&, exchange_setup&);
template asio::awaitable<exchange_totals> serve_requests(served_client_tcp&, served_upstream_tcp&, exchange_setup&);

}  // namespace airlock::proxy
