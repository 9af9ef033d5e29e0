#pragma once
// The steps a proxied connection shares, transparent or explicit: its one log line, its
// admission, the process lookup, and the relay after the judging (judge_then_relay). Each
// handler reads top to bottom and calls these. The refusal in the channel's language is
// proxy/refusals.hpp, airlock's own resolution of an allowed name and the connect to it
// proxy/upstream_connect.hpp; both are included here, for the handlers that take every step.
#include "attribution/probe.hpp"
#include "proxy/connection.hpp"
#include "proxy/refusals.hpp"
#include "proxy/relay.hpp"
#include "proxy/upstream_connect.hpp"
#include "record/decision_line.hpp"

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace airlock::proxy {
class plain_requests;
class request_gate;
}  // namespace airlock::proxy

namespace airlock::proxy::steps {

std::string text(const boost::asio::ip::tcp::endpoint& ep);

// The session (and its policy) the peer's address belongs to, on the line of a connection
// refused before its session is otherwise looked up: nothing when none holds it.
void name_session(const proxy_context& ctx, const policy::snapshot& snap, const boost::asio::ip::address& peer,
                  record::decision_record& rec);

// True when the peer has already closed or reset the connection.
bool peer_gone(boost::asio::ip::tcp::socket& s) noexcept;

// A connection's line (record/decision_line.hpp): a denial's one line, or an allowed
// connection's decision and close lines, stamped with the time deciding took.
inline record::decision_line connection_line(record::decision_sink& sink, record::decision_record& rec) {
  return {sink, rec, record::decision_line::timing::at_exit};
}

// What the relay saw, for the connection's close line: bytes (the `sent_up` first bytes
// included), how it ended, the requests a plain-HTTP `gate` counted, the budget that cut it.
record::close_facts relay_outcome(const relay_totals& totals, std::uint64_t sent_up, const limiter::ticket& ticket,
                                  const request_gate* gate);

// What a judged connection hands its relay: the client's bytes already sent up, for
// plain HTTP relayed as bytes the gate its requests pass (proxy/plain_requests.hpp), and
// the cut switch of the grant that let it through (judgement::cut).
struct relay_plan {
  relay_plan();
  relay_plan(relay_plan&&) noexcept;
  ~relay_plan();
  std::uint64_t sent_up = 0;
  std::unique_ptr<plain_requests> requests;
  std::shared_ptr<base::cut_switch> cut;
};

// A connection's life after its accept, for both listeners: `judge` reads, decides and
// connects (and answers a refusal itself), then the two sockets, the ticket, the line and
// the plan move into the relay (proxy/owned_relay.hpp), which relays until both ways are
// done, the connection idles out or a budget cuts it, and writes the close line. The
// coroutine ends when the relay starts, so an idle connection keeps no coroutine frame.
using judge_fn = boost::asio::awaitable<bool> (*)(boost::asio::ip::tcp::socket& client,
                                                  const boost::asio::ip::tcp::endpoint& peer,
                                                  boost::asio::ip::tcp::socket& upstream, proxy_context& ctx,
                                                  limiter::ticket& ticket, record::decision_line& line,
                                                  relay_plan& plan);
boost::asio::awaitable<void> judge_then_relay(boost::asio::ip::tcp::socket client, boost::asio::ip::tcp::endpoint peer,
                                              proxy_context& ctx, judge_fn judge);

// Starts looking up the sandbox process behind this connection, when its session was
// started by airlock (it has a network namespace to look in). `addressed`: where the client
// connected to; absent (explicit proxy: airlock itself), it is read from the socket, and
// only when there is a process to look for.
void start_probe(proxy_context& ctx, record::decision_line& line, boost::asio::ip::tcp::socket& accepted,
                 const boost::asio::ip::tcp::endpoint& client,
                 std::optional<boost::asio::ip::tcp::endpoint> addressed = std::nullopt);

// Admits a connection of `session`: the limit it is over, or empty. The first is the log's:
// while it cannot record, nothing new goes out (log.when_unwritable: refuse), whatever the
// session's own limits say; then memory ("memory": base/overload.hpp's refusing level).
std::string_view admit(proxy_context& ctx, limiter::ticket& ticket, const std::string& session);
}  // namespace airlock::proxy::steps
