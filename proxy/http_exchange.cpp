#include "proxy/http_exchange.hpp"

#include "core/deadline.hpp"
#include "proxy/http_head.hpp"
#include "proxy/location.hpp"
#include "proxy/served_streams.hpp"
#include "proxy/steps.hpp"

#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/core/stream_traits.hpp>
#include <boost/beast/http/buffer_body.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/serializer.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>

#include <algorithm>
#include <array>
#include <optional>
#include <span>
#include <variant>

namespace airlock::proxy {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using core::nothrow;
using policy::reason;
using policy::verdict;

// Body bytes move through this much memory per direction, whatever their size.
constexpr std::size_t piece_size = 16 * 1024;

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
    auto [ec, n] = co_await s.async_read_some(buf.prepare(4096), nothrow);
    if (ec) {
      out.timed_out = is_timeout(ec);
      co_return out;
    }
    buf.commit(n);
  }
}

// The path of an origin-form or absolute-form target, for path rules ("http://h/x?q" -> "/x?q").
std::string_view path_of(std::string_view target, bool absolute_form) {
  if (!absolute_form) return target;
  const auto scheme = target.find("://");
  const auto slash = target.find('/', scheme == std::string_view::npos ? 0 : scheme + 3);
  return slash == std::string_view::npos ? std::string_view("/") : target.substr(slash);
}

// Same-length masking keeps Content-Length true and chunk sizes honest.
void mask_all(std::string& text, std::string_view secret) {
  if (secret.empty()) return;
  for (auto at = text.find(secret); at != std::string::npos; at = text.find(secret, at + secret.size()))
    std::fill_n(text.begin() + static_cast<std::ptrdiff_t>(at), secret.size(), '*');
}

// A refusal on a served connection: the status, the JSON body the proxy's other refusals
// carry, and Connection: close (the next request comes on a new, separately judged connection).
template <typename Stream>
asio::awaitable<void> answer_refusal(Stream& s, unsigned status, const core::decision_record& rec) {
  http::response<http::string_body> res{static_cast<http::status>(status), 11};
  res.set(http::field::content_type, "application/json");
  res.set(http::field::connection, "close");
  res.set("X-Airlock-Reason", policy::to_string(rec.reason));
  res.body() = "{\"reason\":" + core::json_quote(policy::to_string(rec.reason)) +
               ",\"rule\":" + core::json_quote(rec.rule) + ",\"name\":" + core::json_quote(rec.name) +
               ",\"session\":" + core::json_quote(rec.session) + "}\n";
  res.prepare_payload();
  co_await http::async_write(s, res, nothrow);
}

// Copies one message's body from `from` to `to` behind a header already written by `sr`,
// piece by piece; `secret` (when not empty) is masked across piece boundaries.
// Each piece restarts both sides' idle deadline: a long transfer that keeps moving is never cut.
template <bool IsRequest, typename From, typename To>
asio::awaitable<bool> relay_body(From& from, beast::flat_buffer& buf, http::parser<IsRequest, http::buffer_body>& p,
                                 To& to, http::serializer<IsRequest, http::buffer_body>& sr, std::string_view secret,
                                 std::chrono::steady_clock::duration idle, std::uint64_t& moved,
                                 limiter::ticket& ticket, bool& cut) {
  std::array<char, piece_size> piece{};
  std::string pending;  // masked bytes not yet sent (the tail may be the start of a secret)
  const std::size_t hold = secret.empty() ? 0 : secret.size() - 1;
  do {
    beast::get_lowest_layer(from).expires_after(idle);
    beast::get_lowest_layer(to).expires_after(idle);
    if (!p.is_done()) {
      p.get().body().data = piece.data();
      p.get().body().size = piece.size();
      auto [ec, n] = co_await http::async_read(from, buf, p, nothrow);
      if (ec == http::error::need_buffer) ec = {};
      if (ec) co_return false;
      const auto got = piece.size() - p.get().body().size;
      pending.append(piece.data(), got);
      if (!secret.empty()) mask_all(pending, secret);
    }
    const bool last = p.is_done();
    const std::size_t send = last ? pending.size() : (pending.size() > hold ? pending.size() - hold : 0);
    std::string out = pending.substr(0, send);
    pending.erase(0, send);
    p.get().body().data = out.empty() ? nullptr : out.data();
    p.get().body().size = out.size();
    p.get().body().more = !last;
    auto [wec, wn] = co_await http::async_write(to, sr, nothrow);
    if (wec == http::error::need_buffer) wec = {};
    if (wec) co_return false;
    moved += out.size();
    if (!ticket.moved(IsRequest, out.size())) {
      cut = true;
      co_return false;
    }
  } while (!p.is_done() || !sr.is_done());
  co_return true;
}

}  // namespace

template <typename Client, typename Upstream>
asio::awaitable<exchange_totals> serve_requests(Client& client, Upstream& upstream, exchange_setup& x) {
  exchange_totals totals;
  beast::flat_buffer from_client, from_upstream;
  auto& client_tcp = beast::get_lowest_layer(client);
  auto& upstream_tcp = beast::get_lowest_layer(upstream);
  const auto& session = x.connection.session;

  for (;; ++totals.requests) {
    core::decision_record rec;
    rec.event = core::event_kind::http;
    rec.session = x.connection.session;
    rec.client = x.connection.client;
    rec.dst = x.connection.dst;
    rec.upstream = x.connection.upstream;
    rec.proto = "http";  // the request's protocol; its connection's line says tls or http
    rec.conn = x.connection.conn;
    rec.policy = x.connection.policy;
    rec.policy_version = x.connection.policy_version;

    // 1. The request head, within the first-bytes limit for the first request and the
    //    idle limit between requests.
    client_tcp.expires_after(totals.requests == 0 ? x.ctx.settings.peek_limit : x.ctx.settings.idle_limit);
    auto head = co_await read_head(client, from_client);
    if (!head.parsed) {
      if (!head.any_bytes) co_return totals;  // the client is done (or went quiet): no request, no line
      rec.reason = head.timed_out ? reason::timeout : reason::truncated;
      x.ctx.log.emit(rec);
      co_return totals;
    }
    steps::emit_once line{x.ctx.log, rec};
    const auto* req_head = std::get_if<http_head::request>(&*head.parsed);
    if (req_head == nullptr) {
      const auto* f = std::get_if<http_head::failed>(&*head.parsed);
      rec.reason = f && f->why == http_head::error::too_large ? reason::too_large : reason::parse_error;
      rec.status = 400;
      co_await answer_refusal(client, 400, rec);
      co_return totals;
    }
    rec.method = req_head->method;
    rec.path = req_head->target;
    rec.name = req_head->host;

    // The same bytes through Beast's parser, for the body's framing. A head our strict
    // parser accepted and Beast refuses is refused: two parsers must never disagree.
    http::request_parser<http::buffer_body> req;
    req.header_limit(static_cast<std::uint32_t>(http_head::default_max_size));
    req.body_limit(boost::none);  // bodies stream; the session's byte budget meters them
    req.eager(false);
    boost::system::error_code pec;
    req.put(asio::buffer(from_client.data().data(), req_head->head_size), pec);
    from_client.consume(req_head->head_size);
    const bool ambiguous_framing = req.is_header_done() &&
                                   req.get().count(http::field::content_length) > 0 &&
                                   req.get().count(http::field::transfer_encoding) > 0;
    if (pec || !req.is_header_done() || ambiguous_framing) {
      rec.reason = reason::parse_error;
      if (ambiguous_framing) rec.notes.push_back("content_length_and_transfer_encoding");
      rec.status = 400;
      co_await answer_refusal(client, 400, rec);
      co_return totals;
    }

    // 2. Judge it: the connection's name, then the rule's methods and paths.
    auto host = policy::domain_name::parse(req_head->host);
    const bool same_host = host.has_value() && *host == x.name && (!req_head->port || *req_head->port == x.port);
    policy::decision d;
    unsigned refusal = 403;
    if (!same_host) {
      // The first request of a TLS connection naming another host than its SNI is
      // fronting; a later one is a client reusing the connection for another name:
      // 421 sends it to open a new connection, judged on its own.
      if (x.tls && totals.requests == 0) {
        d = {verdict::deny, reason::sni_host_mismatch, "default"};
      } else {
        d = {verdict::deny, reason::misdirected, "default"};
        refusal = 421;
      }
    } else {
      d = x.policy.decide_request(x.name, x.port, req_head->method, path_of(req_head->target, req_head->absolute_form));
      if (d.reason == reason::parse_error) refusal = 400;
    }
    rec.verdict = d.verdict;
    rec.reason = d.reason;
    rec.rule = std::string(d.rule);
    if (d.verdict == verdict::deny) {
      rec.status = refusal;
      co_await answer_refusal(client, refusal, rec);
      co_return totals;
    }

    // 3. A credential the sandbox never holds, only on a TLS connection whose name,
    //    resolution and destination agree, only into its own header.
    std::string secret;
    if (const auto* cred = x.policy.credential_for(x.name, path_of(req_head->target, req_head->absolute_form))) {
      if (x.tls && x.destination_agrees) {
        req.get().erase(cred->header);
        req.get().set(cred->header, cred->value);
        // A compressed echo of the secret could not be masked.
        req.get().set(http::field::accept_encoding, "identity");
        secret = cred->value;
        rec.notes.push_back("credential_injected");
      } else {
        rec.notes.push_back(x.tls ? "credential_withheld:dst_mismatch" : "credential_withheld:plaintext");
      }
    }

    // 4. Forward the request. A client waiting for 100 Continue hears it from airlock, now
    //    that the request is allowed: the body then flows straight through.
    const auto idle = x.ctx.settings.idle_limit;
    upstream_tcp.expires_after(idle);
    client_tcp.expires_after(idle);
    if (const auto expect = req.get().find(http::field::expect);
        expect != req.get().end() && beast::iequals(expect->value(), "100-continue")) {
      req.get().erase(http::field::expect);
      static constexpr std::string_view go_on = "HTTP/1.1 100 Continue\r\n\r\n";
      if (auto [ec, n] = co_await asio::async_write(client, asio::buffer(go_on), nothrow); ec) co_return totals;
    }
    const bool head_request = req_head->method == "HEAD";
    const bool client_keeps_alive = req.keep_alive();
    std::uint64_t up = 0, down = 0;
    {
      http::request_serializer<http::buffer_body> sr{req.get()};
      auto [ec, n] = co_await http::async_write_header(upstream, sr, nothrow);
      if (ec) co_return totals;
      up += n;
      if (!co_await relay_body(client, from_client, req, upstream, sr, {}, idle, up, x.ticket, totals.cut)) {
        rec.bytes_up = up;
        totals.up += up;
        if (totals.cut) steps::cut_by_budget(rec, x.ticket.spent());
        co_return totals;
      }
    }
    totals.up += up;

    // 5. The response: informational ones pass on; a redirect may grant a one-shot allowance.
    std::optional<http::response_parser<http::buffer_body>> parser;
    upstream_tcp.expires_after(idle);
    for (;;) {
      auto& res = parser.emplace();
      res.header_limit(static_cast<std::uint32_t>(http_head::default_max_size));
      res.body_limit(boost::none);
      if (head_request) res.skip(true);
      auto [ec, n] = co_await http::async_read_header(upstream, from_upstream, res, nothrow);
      if (ec) {
        rec.notes.push_back(is_timeout(ec) ? "upstream_timeout" : "upstream_closed");
        rec.bytes_up = up;
        co_return totals;
      }
      const auto code = res.get().result_int();
      if (code < 100 || code >= 200 || code == 101) break;
      http::response_serializer<http::buffer_body> info{res.get()};
      auto [wec, wn] = co_await http::async_write_header(client, info, nothrow);
      if (wec) co_return totals;
      down += wn;
    }
    auto& res = *parser;
    const auto status = res.get().result_int();
    rec.status = status;
    if (status == 101) rec.notes.push_back("upgrade_refused");
    if (status >= 300 && status < 400 && x.ctx.grants != nullptr) {
      if (const auto it = res.get().find(http::field::location); it != res.get().end())
        if (const auto target = location_host(it->value())) {
          auto to = policy::domain_name::parse(target->host);
          if (to.has_value() && !(*to == x.name)) {
            const std::uint16_t to_port = target->port.value_or(target->https ? 443 : 80);
            const auto already = x.policy.decide(*to, to_port);
            if (!already.allowed()) {
              if (const auto* rule = x.policy.redirect_to(x.name, *to)) {
                x.ctx.grants->grant(session, *to, x.name, rule->mark.to_string(), std::chrono::steady_clock::now());
                rec.notes.push_back("redirect_granted:" + to->str());
              } else {
                x.ctx.grants->refused(session, *to, x.name, std::chrono::steady_clock::now());
                rec.notes.push_back("redirect_refused:" + to->str());
              }
            }
          }
        }
    }
    if (!secret.empty()) {
      std::vector<std::pair<std::string, std::string>> masked;
      for (const auto& f : res.get()) {
        std::string value(f.value());
        if (value.find(secret) == std::string::npos) continue;
        mask_all(value, secret);
        masked.emplace_back(std::string(f.name_string()), std::move(value));
      }
      for (auto& [name, value] : masked) res.get().set(name, value);
      if (!masked.empty()) rec.notes.push_back("secret_masked");
    }
    const bool upstream_keeps_alive = res.keep_alive();
    {
      http::response_serializer<http::buffer_body> sr{res.get()};
      auto [ec, n] = co_await http::async_write_header(client, sr, nothrow);
      if (ec) co_return totals;
      down += n;
      if (status != 101 &&
          !co_await relay_body(upstream, from_upstream, res, client, sr, secret, idle, down, x.ticket, totals.cut)) {
        rec.bytes_up = up;
        rec.bytes_down = down;
        totals.down += down;
        if (totals.cut) steps::cut_by_budget(rec, x.ticket.spent());
        co_return totals;
      }
    }
    rec.bytes_up = up;
    rec.bytes_down = down;
    totals.down += down;
    if (status == 101 || !client_keeps_alive || !upstream_keeps_alive) {
      ++totals.requests;
      co_return totals;
    }
  }
}

template asio::awaitable<exchange_totals> serve_requests(served_client_tls&, served_upstream_tls&, exchange_setup&);
template asio::awaitable<exchange_totals> serve_requests(served_client_tcp&, served_upstream_tcp&, exchange_setup&);

}  // namespace airlock::proxy
