#include "proxy/http_exchange.hpp"

#include "base/deadline.hpp"
#include "proxy/http_head.hpp"
#include "proxy/judge.hpp"
#include "proxy/location.hpp"
#include "proxy/served_streams.hpp"
#include "proxy/steps.hpp"

#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/stream_traits.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http/buffer_body.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/serializer.hpp>
#include <boost/beast/http/write.hpp>

#include <algorithm>
#include <array>
#include <optional>
#include <span>
#include <variant>
#include <vector>

namespace airlock::proxy {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using base::nothrow;
using policy::reason;
using policy::verdict;

// Body bytes move through this much memory per direction, whatever their size.
constexpr std::size_t piece_size = 16 * 1024;
// What a read buffer may hold: a head, and what Beast reads ahead of a body piece. A chunk
// line or trailer section that does not fit fails the read (Beast has no limit of its own).
constexpr std::size_t buffer_limit = http_head::default_max_size + 2 * piece_size;

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

// What an origin might echo of the credentials put on this connection's requests: each
// value, the token after its scheme ("Bearer T" -> "T"), and their JSON-escaped forms.
// Masking keeps the length, so Content-Length stays true and chunk sizes honest.
class secret_mask {
 public:
  void add(std::string_view value) {
    add_form(value);
    if (const auto space = value.find(' '); space != std::string_view::npos && value.size() - space > 8)
      add_form(value.substr(space + 1));
  }
  bool empty() const noexcept { return forms_.empty(); }
  // Bytes to hold back at the end of a piece: the longest form's length less one.
  std::size_t hold() const noexcept { return longest_ == 0 ? 0 : longest_ - 1; }
  // Masks every occurrence of every form; true when something was masked.
  bool apply(std::string& text) const {
    bool any = false;
    for (const auto& f : forms_)
      for (auto at = text.find(f); at != std::string::npos; at = text.find(f, at + f.size())) {
        std::fill_n(text.begin() + static_cast<std::ptrdiff_t>(at), f.size(), '*');
        any = true;
      }
    return any;
  }

 private:
  void add_form(std::string_view v) {
    std::string escaped;
    for (char c : v) {
      if (c == '/') escaped += '\\';
      escaped += c;
    }
    for (auto form : {std::string(v), escaped})
      if (std::find(forms_.begin(), forms_.end(), form) == forms_.end()) {
        longest_ = std::max(longest_, form.size());
        forms_.push_back(std::move(form));
      }
  }
  std::vector<std::string> forms_;
  std::size_t longest_ = 0;
};

// Masks the secrets in every header value in place: a repeated field (Set-Cookie) keeps
// each of its lines, in order.
template <bool IsRequest>
bool mask_fields(http::header<IsRequest>& h, const secret_mask& mask) {
  if (mask.empty()) return false;
  std::vector<std::string> names;
  for (const auto& f : h) {
    std::string value(f.value());
    if (!mask.apply(value)) continue;
    const std::string name(f.name_string());
    if (std::none_of(names.begin(), names.end(), [&](const auto& n) { return beast::iequals(n, name); }))
      names.push_back(name);
  }
  for (const auto& name : names) {
    std::vector<std::string> values;
    for (auto [it, end] = h.equal_range(name); it != end; ++it) {
      std::string value(it->value());
      mask.apply(value);
      values.push_back(std::move(value));
    }
    h.erase(name);
    for (const auto& v : values) h.insert(name, v);
  }
  return !names.empty();
}

// RFC 9112 6.1 framing airlock forwards as it parsed it: no Transfer-Encoding, or exactly
// one whose value is "chunked", on HTTP/1.1, without Content-Length. Anything else is a
// message two parsers may frame differently (request smuggling): refused.
template <bool IsRequest>
bool plain_framing(const http::header<IsRequest>& h) {
  const auto te = h.count(http::field::transfer_encoding);
  if (te == 0) return true;
  if (te != 1 || h.version() != 11 || h.count(http::field::content_length) > 0) return false;
  return beast::iequals(h[http::field::transfer_encoding], "chunked");
}

// Statuses after which no body follows (RFC 9112 6.3), whatever the headers say.
bool bodiless(unsigned status, bool head_request) {
  return head_request || status / 100 == 1 || status == 204 || status == 304;
}

// A refusal on a served connection (steps::refusal_response): the next request comes on a
// new, separately judged connection.
template <typename Stream>
asio::awaitable<void> answer_refusal(Stream& s, unsigned status, const record::decision_record& rec) {
  const auto response = steps::refusal_response(status, rec);
  co_await asio::async_write(s, asio::buffer(response), nothrow);
}

// Copies one message's body from `from` to `to` behind a header already written by `sr`,
// piece by piece as it arrives (an event stream is not held back), with the secrets of
// `mask` masked across piece boundaries. Each piece restarts both sides' idle deadline: a
// transfer that keeps moving is never cut. A TLS peer that closes without close_notify ends
// a body that runs to the close the way a clean close would.
template <bool IsRequest, typename From, typename To>
asio::awaitable<bool> relay_body(From& from, beast::flat_buffer& buf, http::parser<IsRequest, http::buffer_body>& p,
                                 To& to, http::serializer<IsRequest, http::buffer_body>& sr, const secret_mask& mask,
                                 std::chrono::steady_clock::duration idle, std::uint64_t& moved,
                                 limiter::ticket& ticket, bool& cut) {
  std::array<char, piece_size> piece{};
  std::string pending;  // masked bytes not yet sent (their tail may be the start of a secret)
  do {
    beast::get_lowest_layer(from).expires_after(idle);
    beast::get_lowest_layer(to).expires_after(idle);
    if (!p.is_done()) {
      p.get().body().data = piece.data();
      p.get().body().size = piece.size();
      auto [ec, n] = co_await http::async_read_some(from, buf, p, nothrow);
      if (ec == http::error::need_buffer) ec = {};
      if (ec == asio::ssl::error::stream_truncated && p.need_eof()) p.put_eof(ec);
      if (ec) co_return false;
      pending.append(piece.data(), piece.size() - p.get().body().size);
      mask.apply(pending);
    }
    const bool last = p.is_done();
    const std::size_t hold = mask.hold();
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

// One way of a connection whose protocol switched (a 101 on a port that carries `any`):
// what the parser had read ahead first, then the bytes as they come, until the peer
// closes (passed on as a half-close), a write fails, the idle limit passes or a budget ends.
template <typename From, typename To>
asio::awaitable<void> switched_way(From& from, beast::flat_buffer& ahead, To& to,
                                   std::chrono::steady_clock::duration idle, std::uint64_t& moved, bool up,
                                   limiter::ticket& ticket, bool& cut) {
  std::array<char, piece_size> piece{};
  if (ahead.size() > 0) {
    auto [ec, n] = co_await asio::async_write(to, ahead.data(), nothrow);
    moved += n;
    ahead.consume(n);
    if (ec || !ticket.moved(up, n)) {
      cut = cut || !ec;
      co_return;
    }
  }
  for (;;) {
    beast::get_lowest_layer(from).expires_after(idle);
    auto [rerr, n] = co_await from.async_read_some(asio::buffer(piece), nothrow);
    if (rerr) break;
    beast::get_lowest_layer(to).expires_after(idle);
    auto [wec, wn] = co_await asio::async_write(to, asio::buffer(piece.data(), n), nothrow);
    moved += wn;
    if (wec) co_return;
    if (!ticket.moved(up, wn)) {
      cut = true;
      co_return;
    }
  }
  boost::system::error_code ignored;
  beast::get_lowest_layer(to).socket().shutdown(asio::ip::tcp::socket::shutdown_send, ignored);
}

template <typename Client, typename Upstream>
asio::awaitable<void> relay_switched(Client& client, beast::flat_buffer& from_client, Upstream& upstream,
                                     beast::flat_buffer& from_upstream, std::chrono::steady_clock::duration idle,
                                     std::uint64_t& up, std::uint64_t& down, limiter::ticket& ticket, bool& cut) {
  using namespace asio::experimental::awaitable_operators;
  co_await (switched_way(client, from_client, upstream, idle, up, true, ticket, cut) &&
            switched_way(upstream, from_upstream, client, idle, down, false, ticket, cut));
}

}  // namespace

template <typename Client, typename Upstream>
asio::awaitable<exchange_totals> serve_requests(Client& client, Upstream& upstream, exchange_setup& x) {
  exchange_totals totals;
  beast::flat_buffer from_client{buffer_limit}, from_upstream{buffer_limit};
  auto& client_tcp = beast::get_lowest_layer(client);
  auto& upstream_tcp = beast::get_lowest_layer(upstream);
  const auto& session = x.connection.session;
  const auto idle = idle_limit(x.ctx);
  // Every credential put on a request of this connection: an echo is masked in any later
  // response too, whichever request it seems to answer.
  secret_mask mask;
  const secret_mask no_mask;  // requests carry no echo; named, not a temporary in a co_await

  // Plain HTTP: the host the first request named, as written (lower-cased) with its port.
  // That request was judged with the connection (by its Host, or by the address a DNS
  // answer bound); every later one must name the same.
  std::string plain_host;

  for (;; ++totals.requests) {
    record::decision_record rec;
    rec.event = record::event_kind::http;
    rec.session = x.connection.session;
    rec.client = x.connection.client;
    rec.dst = x.connection.dst;
    rec.upstream = x.connection.upstream;
    rec.proto = "http";  // the request's protocol; its connection's line says tls or http
    rec.conn = x.connection.conn;
    rec.policy = x.connection.policy;
    rec.policy_version = x.connection.policy_version;
    totals.clean = false;

    // 1. The request head, within the idle limit (a client may open a connection ahead of use).
    client_tcp.expires_after(idle);
    auto head = co_await read_head(client, from_client);
    if (!head.parsed) {
      totals.clean = !head.any_bytes;
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
    const auto target = http_head::origin_target(req_head->target, req_head->absolute_form);

    // The same bytes through Beast's parser, for the body's framing. A head our strict
    // parser accepted and Beast refuses, or framed ambiguously, is refused.
    http::request_parser<http::buffer_body> req;
    req.header_limit(static_cast<std::uint32_t>(http_head::default_max_size));
    req.body_limit(boost::none);  // bodies stream; the session's byte budget meters them
    req.eager(false);
    boost::system::error_code pec;
    req.put(asio::buffer(from_client.data().data(), req_head->head_size), pec);
    from_client.consume(req_head->head_size);
    const bool framed = !pec && req.is_header_done() && plain_framing(req.get().base()) &&
                        req_head->body != http_head::body::ambiguous;
    if (!framed) {
      rec.reason = reason::parse_error;
      if (!pec && req.is_header_done()) rec.notes.push_back("ambiguous_framing");
      rec.status = 400;
      co_await answer_refusal(client, 400, rec);
      co_return totals;
    }

    // 2. Judge it: the connection's name, then the rule's methods and paths.
    const request_scope scope{x.policy, x.name, x.port, x.tls, x.upgrades, x.granted, x.connection.rule};
    const auto d = judge_request(*req_head, scope, totals.requests, plain_host);
    const bool switching = d.switching;
    if (!d.note.empty()) rec.notes.push_back(d.note);
    rec.verdict = d.verdict;
    rec.reason = d.reason;
    rec.rule = std::string(d.rule);
    if (d.verdict == verdict::deny) {
      rec.status = d.refusal;
      co_await answer_refusal(client, d.refusal, rec);
      co_return totals;
    }
    // The connection's line stands for an ordinary allowed request; a switch is logged.
    if (!x.log_allowed && d.verdict == verdict::allow && !switching) line.armed = false;
    if (x.from_proxy_client) {
      req.get().target(target);
      req.get().erase(http::field::proxy_authorization);
      req.get().erase("Proxy-Connection");
    }

    // 3. A credential the sandbox never holds, only on a TLS connection whose name,
    //    resolution and destination agree, only into its own header.
    if (const auto* cred = x.policy.credential_for(x.name, target)) {
      if (x.tls && x.destination_agrees) {
        req.get().erase(cred->header);
        req.get().set(cred->header, cred->value);
        // An echo must come back whole and plain to be masked: no compression, no ranges.
        req.get().set(http::field::accept_encoding, "identity");
        req.get().erase(http::field::range);
        req.get().erase(http::field::if_range);
        mask.add(cred->value);
        rec.notes.push_back("credential_injected");
      } else {
        rec.notes.push_back(x.tls ? "credential_withheld:dst_mismatch" : "credential_withheld:plaintext");
      }
    }

    // 4. Forward the request. A client waiting for 100 Continue hears it from airlock, now
    //    that the request is allowed: the body then flows straight through.
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
    auto account = [&] {
      rec.bytes_up = up;
      rec.bytes_down = down;
      totals.up += up;
      totals.down += down;
      if (totals.cut) steps::cut_by_budget(rec, x.ticket.spent());
    };
    {
      http::request_serializer<http::buffer_body> sr{req.get()};
      auto [ec, n] = co_await http::async_write_header(upstream, sr, nothrow);
      up += n;
      if (ec || !x.ticket.moved(true, n)) {
        totals.cut = !ec;
        account();
        co_return totals;
      }
      if (!co_await relay_body(client, from_client, req, upstream, sr, no_mask, idle, up, x.ticket, totals.cut)) {
        account();
        co_return totals;
      }
    }

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
        rec.notes.push_back(is_timeout(ec) ? "upstream_timeout"
                            : ec == http::error::end_of_stream || ec == asio::ssl::error::stream_truncated
                                ? "upstream_closed"
                                : "upstream_malformed");
        account();
        co_return totals;
      }
      const auto code = res.get().result_int();
      if (code < 100 || code >= 200 || code == 101) break;
      mask_fields(res.get().base(), mask);
      http::response_serializer<http::buffer_body> info{res.get()};
      auto [wec, wn] = co_await http::async_write_header(client, info, nothrow);
      down += wn;
      if (wec) {
        account();
        co_return totals;
      }
    }
    auto& res = *parser;
    const auto status = res.get().result_int();
    rec.status = status;
    if (!plain_framing(res.get().base())) {
      rec.notes.push_back("upstream_ambiguous_framing");
      rec.status = 502;
      co_await answer_refusal(client, 502, rec);
      account();
      co_return totals;
    }
    if (!mask.empty()) {
      // A compressed body could carry an echo that cannot be masked.
      const auto coding = res.get()[http::field::content_encoding];
      if (!coding.empty() && !beast::iequals(coding, "identity") && !bodiless(status, head_request)) {
        rec.notes.push_back("encoded_response_with_credential");
        rec.status = 502;
        co_await answer_refusal(client, 502, rec);
        account();
        co_return totals;
      }
      if (mask_fields(res.get().base(), mask)) rec.notes.push_back("secret_masked");
    }
    const bool switched = status == 101 && switching && x.upgrades && !x.tls;
    if (status == 101) rec.notes.push_back(switched ? "upgraded" : "upgrade_refused");
    if (status >= 300 && status < 400 && x.ctx.grants != nullptr) {
      if (const auto it = res.get().find(http::field::location); it != res.get().end())
        if (const auto to_target = location_host(it->value())) {
          auto to = policy::domain_name::parse(to_target->host);
          const bool https = to_target->has_scheme ? to_target->https : x.tls;
          const std::uint16_t to_port = to_target->port.value_or(https ? 443 : 80);
          if (to.has_value() && !(*to == x.name && to_port == x.port)) {
            const auto already = x.policy.decide(*to, to_port);
            if (!already.allowed()) {
              const auto now = std::chrono::steady_clock::now();
              if (const auto* rule = x.policy.redirect_to(x.name, *to)) {
                x.ctx.grants->grant(session, *to, x.name, rule->mark.to_string(), now,
                                    policy::redirect_grants::default_ttl, to_port);
                rec.notes.push_back("redirect_granted:" + to->str());
              } else {
                x.ctx.grants->refused(session, *to, x.name, now);
                rec.notes.push_back("redirect_refused:" + to->str());
              }
            }
          }
        }
    }
    const bool upstream_keeps_alive = res.keep_alive();
    {
      http::response_serializer<http::buffer_body> sr{res.get()};
      auto [ec, n] = co_await http::async_write_header(client, sr, nothrow);
      down += n;
      if (ec || !x.ticket.moved(false, n)) {
        totals.cut = !ec;
        account();
        co_return totals;
      }
      // No body after these, whatever the headers say: a chunked serializer would add one.
      if (!bodiless(status, head_request) &&
          !co_await relay_body(upstream, from_upstream, res, client, sr, mask, idle, down, x.ticket, totals.cut)) {
        account();
        co_return totals;
      }
    }
    if (switched)
      co_await relay_switched(client, from_client, upstream, from_upstream, idle, up, down, x.ticket, totals.cut);
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
