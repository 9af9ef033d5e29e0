#pragma once
// The steps a proxied connection shares, transparent or explicit: its one log line, the
// refusal in the channel's language, airlock's own resolution of an allowed name, and
// the connect to it. Each handler reads top to bottom and calls these.
#include "attribution/probe.hpp"
#include "dns/lookup.hpp"
#include "policy/domain_name.hpp"
#include "policy/snapshot.hpp"
#include "proxy/connection.hpp"
#include "proxy/relay.hpp"
#include "proxy/sniff.hpp"
#include "record/decision.hpp"

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace airlock::proxy {
class plain_requests;
}

namespace airlock::proxy::steps {

std::string text(const boost::asio::ip::tcp::endpoint& ep);

// True when the peer has already closed or reset the connection.
bool peer_gone(boost::asio::ip::tcp::socket& s) noexcept;

// A connection's lines. A denial's one line goes out on every way out of the coroutine
// (deny, error or cancellation at shutdown), with the duration filled in at that moment.
// An allowed connection's decision line goes out when it is decided (decide()), stamped
// with the session's labels and tool call of that moment; then, on every way out, its
// `close` line with what came after: bytes, duration, the notes added since. When a
// process lookup was started, the decision line waits for it (briefly, off the data path).
struct emit_once {
  record::decision_sink& sink;
  record::decision_record& record;
  std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
  attribution::probe probe{};
  bool armed = true;  // false once a relayed_line has taken the line over
  // Set by decide(): the notes the decision line carried (the close line has the rest).
  std::optional<std::size_t> decided_notes{};
  // Writes the decision line now; what is left to write is the close line.
  void decide();
  ~emit_once();
};

// `rec`, a decided connection's record, as its close line: `decided_notes` of its notes
// were on the decision line, and it began at `started`.
void make_close_line(record::decision_record& rec, std::size_t decided_notes,
                     std::chrono::steady_clock::time_point started);

// The close line of a connection that only relays now. GCC keeps every local of a
// coroutine in its frame for the coroutine's whole life, so the handlers judge a
// connection in one coroutine (with its record, its sniffed bytes, its decision...) and
// relay it in the caller, which holds only the two sockets, the ticket and this: the
// record packed into one string (about 200 bytes for a typical line, against a 776-byte
// record and its strings) and the start time. Emitted, unpacked, with the relay's
// outcome, on every way out, like emit_once.
class relayed_line {
 public:
  explicit relayed_line(record::decision_sink& sink) noexcept : sink_(sink) {}
  relayed_line(const relayed_line&) = delete;
  relayed_line& operator=(const relayed_line&) = delete;
  ~relayed_line();

  // Writes `line`'s decision line (when it is not written yet), packs what its close
  // line needs and takes over its duty to write that.
  void take(emit_once& line);
  // What the relay did: bytes (those sent before it included), an idle timeout, a cut.
  void relayed(const relay_totals& totals, std::uint64_t sent_up, const limiter::ticket& ticket) noexcept;
  // A note for the close line (requests:N).
  void note(std::string n) noexcept { note_ = std::move(n); }

 private:
  record::decision_sink& sink_;
  std::string packed_;  // empty: nothing taken, nothing to emit
  std::chrono::steady_clock::time_point started_{};
  std::optional<relay_totals> totals_;
  std::string_view spent_;  // the budget a cut connection spent
  std::string note_;
};

// What a judged connection hands its relay: the client's bytes already sent up, and for
// plain HTTP relayed as bytes the gate its requests pass (proxy/plain_requests.hpp).
struct relay_plan {
  relay_plan();
  ~relay_plan();
  std::uint64_t sent_up = 0;
  std::unique_ptr<plain_requests> requests;
};

// A connection's life after its accept, for both listeners: `judge` reads, decides and
// connects (and answers a refusal itself), then the two sockets are relayed here until
// both are done, the connection idles out or a budget cuts it. The handlers return this
// awaitable rather than awaiting it, so an idle connection holds one frame, not two.
using judge_fn = boost::asio::awaitable<bool> (*)(boost::asio::ip::tcp::socket& client,
                                                  const boost::asio::ip::tcp::endpoint& peer,
                                                  boost::asio::ip::tcp::socket& upstream, proxy_context& ctx,
                                                  limiter::ticket& ticket, relayed_line& line, relay_plan& plan);
boost::asio::awaitable<void> judge_then_relay(boost::asio::ip::tcp::socket client, boost::asio::ip::tcp::endpoint peer,
                                              proxy_context& ctx, judge_fn judge);

// A decision record as one string and back (exposed for tests).
std::string pack(const record::decision_record& r);
record::decision_record unpack(std::string_view packed);

// Starts looking up the sandbox process behind this connection, when its session was
// started by airlock (it has a network namespace to look in). `addressed`: where the client
// connected to; absent (explicit proxy: airlock itself), it is read from the socket, and
// only when there is a process to look for.
void start_probe(proxy_context& ctx, emit_once& line, boost::asio::ip::tcp::socket& accepted,
                 const boost::asio::ip::tcp::endpoint& client,
                 std::optional<boost::asio::ip::tcp::endpoint> addressed = std::nullopt);

// A denial in the language of the channel, so the client learns it was refused rather
// than seeing a hang: a TLS alert, an HTTP 403 (502 when the upstream failed) with a JSON
// body naming the reason, or a reset for opaque TCP. A started process lookup is awaited
// first (at most 100 ms): the refused client is still there to be named, and a denial is
// what an operator most wants attributed. Allowed traffic never waits for it.
boost::asio::awaitable<void> refuse(boost::asio::ip::tcp::socket& client, sniffed::kind channel, emit_once& line);

// The HTTP refusal: `status` (400, 403, 421 or 502), Connection: close, the reason in
// X-Airlock-Reason and a JSON body naming reason, rule, name and session.
std::string refusal_response(unsigned status, const record::decision_record& rec);

// Admits a connection of `session`: the limit it is over, or empty. The first is the log's:
// while it cannot record, nothing new goes out (log.when_unwritable: refuse), whatever the
// session's own limits say; then memory ("memory": base/overload.hpp's refusing level).
std::string_view admit(proxy_context& ctx, limiter::ticket& ticket, const std::string& session);

// Past a cap or a session's limit: a logged deny (limit_exceeded, the note names the
// limit), answered like any other refusal on the channel.
boost::asio::awaitable<void> refuse_over_limit(boost::asio::ip::tcp::socket& client, sniffed::kind channel,
                                               emit_once& line, std::string_view limit);
// A connection reset as soon as it was accepted, before it had a coroutine of its own
// (airlock was out of descriptors): its line, a deny with limit_exceeded and the limit.
void log_refused_at_accept(proxy_context& ctx, const boost::asio::ip::tcp::endpoint& client, std::string_view limit);

// An allowed connection cut because its session spent a byte budget: the line says so.
void cut_by_budget(record::decision_record& rec, std::string_view budget);

// Airlock's own resolution of an allowed name, minus special addresses that no cidr rule
// of this policy allows. Empty when there is nothing to connect to; then `rec` says why
// (resolve_failed, or private_address, which audit mode never softens). `first`: the
// address family asked first (the other only when it has none).
boost::asio::awaitable<std::vector<boost::asio::ip::address>> own_resolution(
    proxy_context& ctx, const policy::compiled_policy& p, const policy::domain_name& name, std::uint16_t port,
    record::decision_record& rec, dns::ask_first first = dns::ask_first::a);

// A connection without a name goes to the address its client chose: false, with `rec` a
// private_address denial (note own_address for one of airlock's own), when this policy may
// not reach it on `port` (policy/own_addresses.hpp). Never softened by audit mode.
bool destination_reachable(proxy_context& ctx, const policy::compiled_policy& p,
                           const boost::asio::ip::address& address, std::uint16_t port, record::decision_record& rec);

// Where a connect got to: the endpoint reached, or none. None because airlock itself had no
// descriptor left for the upstream socket is airlock's limit, not the upstream's failure,
// and is logged as such (limit:open_files, not upstream_unreachable).
struct upstream_reached {
  std::optional<boost::asio::ip::tcp::endpoint> at;
  bool out_of_descriptors = false;
  std::size_t sent_first = 0;  // of the first bytes connect_any was given, those it sent
  explicit operator bool() const noexcept { return at.has_value(); }
  const boost::asio::ip::tcp::endpoint& operator*() const { return *at; }
};

// Connects to the first address that answers, within one overall deadline. When nothing
// is reached the socket is closed; out of descriptors, no further address is tried. `first`
// (the client's first bytes, if any) is sent as soon as the connect is established, as
// much of it as the socket takes at once; the caller sends the rest (`sent_first`).
boost::asio::awaitable<upstream_reached> connect_any(boost::asio::ip::tcp::socket& upstream,
                                                     const std::vector<boost::asio::ip::address>& addresses,
                                                     std::uint16_t port, std::chrono::steady_clock::duration limit,
                                                     std::span<const std::byte> first = {});

// connect_any over own_resolution's `targets` within the connect limit. When none answers
// and the connection is named, the other address family's addresses that the cache holds
// (none is asked upstream) are tried in what is left of the limit: a gateway with no IPv6
// route out still carries an IPv6 client over IPv4, as the client, whose connection airlock
// already accepted, can no longer fall back by itself. Nothing of this runs on success.
boost::asio::awaitable<upstream_reached> connect_resolved(boost::asio::ip::tcp::socket& upstream, proxy_context& ctx,
                                                          const policy::compiled_policy& p,
                                                          const policy::domain_name* name,
                                                          const std::vector<boost::asio::ip::address>& targets,
                                                          std::uint16_t port, std::span<const std::byte> first = {});

// connect_resolved, then the rest of `first` that the connect did not send: true when all of
// it went up (`sent_up` says how much did, `line.record.upstream` where); false when the
// upstream was not reached (the client refused in `channel`'s language) or a write failed.
boost::asio::awaitable<bool> connect_and_send_first(boost::asio::ip::tcp::socket& client,
                                                    boost::asio::ip::tcp::socket& upstream, proxy_context& ctx,
                                                    const policy::compiled_policy& p, const policy::domain_name* name,
                                                    const std::vector<boost::asio::ip::address>& targets,
                                                    std::uint16_t port, std::span<const std::byte> first,
                                                    sniffed::kind channel, emit_once& line, std::uint64_t& sent_up);

// The refusal of a connection whose upstream was not reached: upstream_unreachable, or
// limit_exceeded with limit:open_files when airlock had no descriptor for the socket.
boost::asio::awaitable<void> refuse_unreached(boost::asio::ip::tcp::socket& client, sniffed::kind channel,
                                              emit_once& line, const upstream_reached& r);

}  // namespace airlock::proxy::steps
