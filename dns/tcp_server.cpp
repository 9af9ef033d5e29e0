// DNS over TCP (RFC 7766): length-framed queries, several per connection, answered in
// order. Every way a connection ends that leaves a query unanswered, or refuses one before
// it is read, writes a `dns` line (and so counts in airlock_decisions_total); the ends a
// well-behaved client causes (it closed, or went quiet after its queries) write none.
#include "dns/server.hpp"

#include "base/deadline.hpp"
#include "base/spawn.hpp"
#include "dns/tcp_frames.hpp"

#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/write.hpp>

#include <array>
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>

namespace airlock::dns {
namespace {

namespace asio = boost::asio;
using asio::ip::tcp;
using policy::reason;

void report(const char* what) { std::fprintf(stderr, "airlock: dns tcp connection: internal error: %s\n", what); }

// What one listener's connections hold, on its loop: open in all and per session.
struct tcp_usage {
  std::size_t open = 0;
  std::unordered_map<std::string, std::size_t> per_session;
};

// Whose connection this is, as the query lines will say: looked up once, at accept.
struct tcp_peer {
  tcp::endpoint endpoint;
  std::string session;  // empty: no session holds the address (each query is refused so)
  std::string policy;
  std::string policy_version;
};

tcp_peer identify(query_context& ctx, const tcp::endpoint& endpoint) {
  tcp_peer p{endpoint, {}, {}, {}};
  const auto snap = ctx.policies.current();
  p.policy_version = snap->version();
  if (const auto s = snap->session_for(endpoint.address(), ctx.policies.registered().get())) {
    p.session = std::string(s->id);
    p.policy = s->policy->name();
  }
  return p;
}

// The ends of a connection (and refusals of one) that leave a query unanswered: each
// writes a line. A client that closes, or goes quiet, after its queries writes none.
enum class tcp_end {
  over_listener_cap,
  over_session_cap,
  over_query_cap,
  length_zero,
  quiet_in_query,
  closed_in_query,
  quiet_without_query,
  reply_not_read,
  reply_unsent,
};

std::string_view tcp_end_note(tcp_end e) {
  switch (e) {
    case tcp_end::over_listener_cap: return "limit:dns_tcp_connections";
    case tcp_end::over_session_cap: return "limit:session_dns_tcp_connections";
    case tcp_end::over_query_cap: return "limit:dns_tcp_queries_per_connection";
    case tcp_end::length_zero: return "dns_tcp:length_zero";
    case tcp_end::quiet_in_query:
    case tcp_end::closed_in_query: return "dns_tcp:partial_query";
    case tcp_end::quiet_without_query: return "dns_tcp:no_query";
    case tcp_end::reply_not_read: return "dns_tcp:reply_not_read";
    case tcp_end::reply_unsent: return "dns_tcp:reply_unsent";
  }
  __builtin_unreachable();  // every end is named above (-Wswitch says when one is not)
}

reason tcp_end_reason(tcp_end e) {
  switch (e) {
    case tcp_end::over_listener_cap:
    case tcp_end::over_session_cap:
    case tcp_end::over_query_cap: return reason::limit_exceeded;
    case tcp_end::length_zero: return reason::dns_malformed;
    case tcp_end::quiet_in_query:
    case tcp_end::quiet_without_query: return reason::timeout;
    case tcp_end::closed_in_query:
    case tcp_end::reply_not_read:
    case tcp_end::reply_unsent: return reason::truncated;
  }
  __builtin_unreachable();
}

// The end's line: a `dns` deny without a name, counted like every decision.
void log_end(query_context& ctx, const tcp_peer& p, tcp_end e) {
  record::decision_record rec;
  rec.event = record::event_kind::dns;
  rec.proto = "dns";
  rec.client = policy::endpoint_config{p.endpoint.address(), p.endpoint.port()}.to_string();
  rec.session = p.session;
  rec.policy = p.policy;
  rec.policy_version = p.policy_version;
  rec.verdict = policy::verdict::deny;
  rec.reason = tcp_end_reason(e);
  rec.notes.emplace_back(tcp_end_note(e));
  record::decision_line::write(ctx.log, rec);
}

// Holds a connection's place in the listener's counts for its life.
class tcp_slot {
 public:
  tcp_slot(std::shared_ptr<tcp_usage> usage, std::string session)
      : usage_(std::move(usage)), session_(std::move(session)) {
    ++usage_->open;
    ++usage_->per_session[session_];
  }
  tcp_slot(const tcp_slot&) = delete;
  tcp_slot& operator=(const tcp_slot&) = delete;
  ~tcp_slot() {
    --usage_->open;
    if (auto it = usage_->per_session.find(session_); it != usage_->per_session.end() && --it->second == 0)
      usage_->per_session.erase(it);
  }

 private:
  std::shared_ptr<tcp_usage> usage_;
  std::string session_;
};

asio::awaitable<void> tcp_connection(tcp::socket socket, tcp_peer peer, query_context& ctx, tcp_limits limits,
                                     std::shared_ptr<tcp_usage> usage) {
  const tcp_slot slot(std::move(usage), peer.session);
  tcp_frame_buffer frames;
  std::size_t answered = 0;
  for (;;) {
    const auto frame = frames.next();
    if (frame.what == tcp_frame::kind::empty) {
      log_end(ctx, peer, tcp_end::length_zero);
      co_return;
    }
    if (frame.what == tcp_frame::kind::message) {
      if (answered == limits.max_queries_per_connection) {
        log_end(ctx, peer, tcp_end::over_query_cap);
        co_return;
      }
      ++answered;
      auto reply = co_await answer_query(ctx, frame.message, peer.endpoint.address(), peer.endpoint.port(), false);
      if (!reply) continue;  // a message too broken to answer: its line says so
      const std::array<std::uint8_t, 2> length{static_cast<std::uint8_t>(reply->size() >> 8),
                                               static_cast<std::uint8_t>(reply->size() & 0xff)};
      const std::array<asio::const_buffer, 2> out{asio::buffer(length), asio::buffer(*reply)};
      // Bounded like a read: a client that sends queries and never reads the answers
      // would hold the connection (and its place) for ever.
      auto written = co_await base::with_deadline(asio::async_write(socket, out, base::nothrow), limits.idle);
      if (!written || std::get<0>(*written)) {
        log_end(ctx, peer, written ? tcp_end::reply_unsent : tcp_end::reply_not_read);
        co_return;
      }
      continue;
    }
    // Part of a frame, or nothing: read more.
    const auto room = frames.space();
    auto read = co_await base::with_deadline(
        socket.async_read_some(asio::buffer(room.data(), room.size()), base::nothrow), limits.idle);
    if (!read) {
      // RFC 7766 6.2.3: an idle connection is closed. Quiet after its queries is a client
      // done; quiet before any, or in the middle of one, is a place held for nothing.
      if (frames.holding()) log_end(ctx, peer, tcp_end::quiet_in_query);
      else if (answered == 0) log_end(ctx, peer, tcp_end::quiet_without_query);
      co_return;
    }
    auto [ec, n] = *read;
    if (ec) {
      if (frames.holding()) log_end(ctx, peer, tcp_end::closed_in_query);
      co_return;  // closed between queries: the normal end
    }
    frames.filled(n);
  }
}

}  // namespace

asio::awaitable<void> serve_tcp(tcp::acceptor& acceptor, query_context& ctx, tcp_limits limits) {
  auto ex = co_await asio::this_coro::executor;
  auto usage = std::make_shared<tcp_usage>();
  for (;;) {
    auto [ec, socket] = co_await acceptor.async_accept(base::nothrow);
    if (ec == asio::error::operation_aborted || !acceptor.is_open()) co_return;
    if (ec) {
      // EMFILE and friends: pause instead of spinning on a listener that cannot accept.
      asio::steady_timer pause(ex, std::chrono::milliseconds(50));
      co_await pause.async_wait(base::nothrow);
      continue;
    }
    boost::system::error_code peer_ec;
    const auto endpoint = socket.remote_endpoint(peer_ec);
    if (peer_ec) continue;  // gone before it was accepted: nothing was asked
    auto peer = identify(ctx, endpoint);
    // Past a cap the connection is closed at once (UDP still serves); its line says which.
    if (usage->open >= limits.max_connections) {
      log_end(ctx, peer, tcp_end::over_listener_cap);
      continue;
    }
    if (const auto it = usage->per_session.find(peer.session); limits.max_connections_per_session &&
                                                               it != usage->per_session.end() &&
                                                               it->second >= limits.max_connections_per_session) {
      log_end(ctx, peer, tcp_end::over_session_cap);
      continue;
    }
    base::spawn_session(ex, tcp_connection(std::move(socket), std::move(peer), ctx, limits, usage), report);
  }
}

}  // namespace airlock::dns
