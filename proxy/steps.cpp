#include "proxy/steps.hpp"

#include "base/deadline.hpp"
#include "base/deadline_watch.hpp"
#include "dns/lookup.hpp"
#include "policy/own_addresses.hpp"
#include "proxy/own_socket.hpp"
#include "proxy/plain_requests.hpp"
#include "proxy/relay.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <type_traits>

#include <sys/socket.h>

namespace airlock::proxy::steps {

namespace asio = boost::asio;
using asio::ip::tcp;
using base::nothrow;
using policy::reason;

std::string text(const tcp::endpoint& ep) { return policy::endpoint_config{ep.address(), ep.port()}.to_string(); }

bool peer_gone(tcp::socket& s) noexcept {
  char byte;
  const auto n = ::recv(s.native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
}

namespace {

std::uint64_t milliseconds_since(std::chrono::steady_clock::time_point t) noexcept {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t).count());
}

// What the decision line said and the close line does not repeat: its first `decided_notes`
// notes and the process.
void forget_decided(record::decision_record& rec, std::size_t decided_notes) {
  const auto n = static_cast<std::ptrdiff_t>(std::min(decided_notes, rec.notes.size()));
  rec.notes.erase(rec.notes.begin(), rec.notes.begin() + n);
  rec.process_json.clear();
}

}  // namespace

void emit_once::decide() {
  if (decided_notes) return;
  record.ts = std::chrono::system_clock::now();
  record.duration_ms = milliseconds_since(started);
  attribution::emit_line(sink, record, probe);
  decided_notes = record.notes.size();
}

void make_close_line(record::decision_record& rec, std::size_t decided_notes,
                     std::chrono::steady_clock::time_point started) {
  rec.event = record::event_kind::close;
  rec.ts = std::chrono::system_clock::now();
  forget_decided(rec, decided_notes);
  rec.duration_ms = milliseconds_since(started);
}

emit_once::~emit_once() {
  if (!armed) return;
  if (!decided_notes) {
    record.ts = std::chrono::system_clock::now();
    record.duration_ms = milliseconds_since(started);
    attribution::emit_line(sink, record, probe);
    return;
  }
  try {
    make_close_line(record, *decided_notes, started);
    sink.emit(record);
  } catch (...) {
    std::fprintf(stderr, "airlock: a close line was lost (out of memory)\n");
  }
}

void start_probe(proxy_context& ctx, emit_once& line, tcp::socket& accepted, const tcp::endpoint& client,
                 std::optional<tcp::endpoint> addressed) {
  const std::string netns = ctx.finder && ctx.netns_of ? ctx.netns_of(line.record.session) : std::string();
  if (netns.empty()) return;
  if (!addressed) {
    boost::system::error_code ec;
    addressed = accepted.local_endpoint(ec);
    if (ec) return;
  }
  line.probe = attribution::probe::start(ctx.finder, netns, attribution::socket_key::tcp(client, *addressed),
                                         accepted.get_executor());
}

std::string refusal_response(unsigned status, const record::decision_record& rec) {
  const char* text = status == 400   ? "Bad Request"
                     : status == 421 ? "Misdirected Request"
                     : status == 502 ? "Bad Gateway"
                                     : "Forbidden";
  const std::string body = "{\"reason\":" + record::json_quote(policy::to_string(rec.reason)) +
                           ",\"rule\":" + record::json_quote(rec.rule) + ",\"name\":" + record::json_quote(rec.name) +
                           ",\"session\":" + record::json_quote(rec.session) + "}\n";
  return "HTTP/1.1 " + std::to_string(status) + " " + text +
         "\r\nContent-Type: application/json\r\nConnection: close\r\nX-Airlock-Reason: " +
         std::string(policy::to_string(rec.reason)) + "\r\nContent-Length: " + std::to_string(body.size()) +
         "\r\n\r\n" + body;
}

asio::awaitable<void> refuse(tcp::socket& client, sniffed::kind channel, emit_once& line) {
  if (line.probe.active()) {
    line.record.process_json = co_await line.probe.json(std::chrono::milliseconds(100));
    line.probe = {};
  }
  const record::decision_record& rec = line.record;
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

asio::awaitable<void> refuse_over_limit(tcp::socket& client, sniffed::kind channel, emit_once& line,
                                        std::string_view limit) {
  auto& rec = line.record;
  rec.verdict = policy::verdict::deny;
  rec.reason = reason::limit_exceeded;
  rec.rule = "default";
  rec.notes.push_back("limit:" + std::string(limit));
  co_await refuse(client, channel, line);
}

std::string_view admit(proxy_context& ctx, limiter::ticket& ticket, const std::string& session) {
  if (ctx.settings.refuse_when_unrecorded && !ctx.log.recording()) return "decision_log";
  if (ctx.overload != nullptr && ctx.overload->refusing()) return "memory";
  return ticket.admit(session);
}

void log_refused_at_accept(proxy_context& ctx, const tcp::endpoint& client, std::string_view limit) {
  record::decision_record rec;
  rec.event = record::event_kind::connect;
  rec.conn = ctx.conn_ids.next();
  const auto snap = ctx.policies.current();
  rec.policy_version = snap->version();
  rec.client = text(client);
  if (const auto s = snap->session_for(client.address(), ctx.policies.registered().get())) {
    rec.session = std::string(s->id);
    rec.policy = s->policy->name();
  }
  rec.verdict = policy::verdict::deny;
  rec.reason = reason::limit_exceeded;
  rec.rule = "default";
  rec.notes.push_back("limit:" + std::string(limit));
  const emit_once line{ctx.log, rec};
}

void cut_by_budget(record::decision_record& rec, std::string_view budget) {
  rec.verdict = policy::verdict::deny;
  rec.reason = reason::limit_exceeded;
  rec.rule = "default";
  rec.notes.push_back("limit:" + std::string(budget));
  rec.notes.push_back("cut_open_connection");
}

namespace {

// An address airlock may connect to for this policy and port (policy/own_addresses.hpp).
bool permitted(proxy_context& ctx, const policy::compiled_policy& p, const asio::ip::address& a, std::uint16_t port) {
  return policy::reachable(p, ctx.policies.own().get(), a, port);
}

}  // namespace

asio::awaitable<bool> connect_and_send_first(asio::ip::tcp::socket& client, asio::ip::tcp::socket& upstream,
                                             proxy_context& ctx, const policy::compiled_policy& p,
                                             const policy::domain_name* name,
                                             const std::vector<asio::ip::address>& targets, std::uint16_t port,
                                             std::span<const std::byte> first, sniffed::kind channel, emit_once& line,
                                             std::uint64_t& sent_up) {
  const auto reached = co_await connect_resolved(upstream, ctx, p, name, targets, port, first);
  if (!reached) {
    co_await refuse_unreached(client, channel, line, reached);
    co_return false;
  }
  auto& rec = line.record;
  rec.upstream = text(*reached);
  sent_up = reached.sent_first;
  if (sent_up < first.size()) {
    auto [wec, wn] = co_await asio::async_write(upstream, asio::buffer(first.data(), first.size()) + sent_up, nothrow);
    sent_up += wn;
    if (wec) {
      rec.bytes_up = sent_up;
      rec.bytes_down = 0;
      co_return false;
    }
  }
  co_return true;
}

bool destination_reachable(proxy_context& ctx, const policy::compiled_policy& p, const asio::ip::address& address,
                           std::uint16_t port, record::decision_record& rec) {
  const auto own = ctx.policies.own();
  if (policy::reachable(p, own.get(), address, port)) return true;
  rec.verdict = policy::verdict::deny;
  rec.reason = reason::private_address;
  if (own && own->contains(address)) rec.notes.push_back("own_address");
  return false;
}

asio::awaitable<std::vector<asio::ip::address>> own_resolution(proxy_context& ctx, const policy::compiled_policy& p,
                                                               const policy::domain_name& name, std::uint16_t port,
                                                               record::decision_record& rec, dns::ask_first first) {
  std::vector<asio::ip::address> targets;
  // What this loop found for the name lately, first (dns/address_memo.hpp). Else the
  // resolver, which lives on the DNS loop: a connection on another loop reads the shared
  // cache itself, and only for a name it does not hold asks there and is resumed here. A
  // name the sandbox just looked up is never asked upstream again.
  const auto now = dns::address_memo::clock::now();
  dns::address_list resolved{dns::found_addresses{}};
  const std::vector<asio::ip::address>* addresses = ctx.memo.find(name.str(), first, now);
  if (addresses == nullptr) {
    if (auto cached = ctx.dns_loop ? dns::cached_addresses(ctx.cache, name, first) : std::nullopt) {
      resolved = std::move(*cached);
    } else {
      // (Two statements, not a ?: of two co_awaits: GCC 12 destroys such a result twice.)
      auto lookup = dns::lookup_addresses(ctx.resolver, ctx.cache, name, first);
      if (ctx.dns_loop) lookup = asio::co_spawn(*ctx.dns_loop, std::move(lookup), asio::use_awaitable);
      resolved = co_await std::move(lookup);
    }
    if (!resolved.has_value() || resolved->addresses.empty()) {
      rec.reason = reason::resolve_failed;
      if (!resolved.has_value()) rec.notes.push_back("upstream_" + std::string(dns::to_string(resolved.error())));
      co_return targets;
    }
    ctx.memo.keep(name.str(), first, *resolved, now);
    addresses = &resolved->addresses;
  }
  std::copy_if(addresses->begin(), addresses->end(), std::back_inserter(targets),
               [&](const asio::ip::address& a) { return permitted(ctx, p, a, port); });
  if (targets.empty()) {
    // Never softened by audit mode: watching a workload must not open the metadata
    // service or the internal network to it.
    rec.verdict = policy::verdict::deny;
    rec.reason = reason::private_address;
    rec.rule = "default";  // the special-address floor decided, not the allow rule
  }
  co_return targets;
}

namespace {

// Every field of a decision record, in one list for both directions, so that packing and
// unpacking cannot drift apart. A field added to decision_record must be added here; the
// debug build checks each packed line against its original (relayed_line::take).
template <typename Archive, typename Record>
void each_field(Archive& a, Record& r) {
  a(r.ts), a(r.event), a(r.session), a(r.labels), a(r.tool_call), a(r.client), a(r.name), a(r.dst);
  a(r.upstream), a(r.proto), a(r.verdict), a(r.reason), a(r.rule), a(r.conn), a(r.policy), a(r.policy_version);
  a(r.qtype), a(r.rcode), a(r.answers), a(r.method), a(r.path), a(r.status), a(r.bytes_up), a(r.bytes_down);
  a(r.duration_ms), a(r.process_json), a(r.notes), a(r.action), a(r.mode), a(r.sources), a(r.dns_queries);
  a(r.connections_allowed), a(r.connections_denied);
}

using system_time = std::chrono::system_clock::time_point;

// Numbers as LEB128 (most are 0 or small), strings as a length and the bytes.
struct packer {
  std::string& out;
  void number(std::uint64_t v) {
    for (; v >= 0x80; v >>= 7) out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    out.push_back(static_cast<char>(v));
  }
  void operator()(const std::string& s) {
    number(s.size());
    out.append(s);
  }
  void operator()(std::uint64_t v) { number(v); }
  void operator()(unsigned v) { number(v); }
  void operator()(system_time t) { number(static_cast<std::uint64_t>(t.time_since_epoch().count())); }
  template <typename E>
    requires std::is_enum_v<E>
  void operator()(E e) { number(static_cast<std::uint64_t>(e)); }
  template <typename T>
  void operator()(const std::optional<T>& o) {
    number(o.has_value());
    if (o) (*this)(*o);
  }
  template <typename T>
  void operator()(const std::vector<T>& v) {
    number(v.size());
    for (const auto& x : v) (*this)(x);
  }
  template <typename A, typename B>
  void operator()(const std::pair<A, B>& p) {
    (*this)(p.first);
    (*this)(p.second);
  }
};

struct unpacker {
  std::string_view in;
  std::uint64_t number() {
    std::uint64_t v = 0;
    for (unsigned shift = 0; !in.empty() && shift < 64; shift += 7) {
      const auto b = static_cast<unsigned char>(in.front());
      in.remove_prefix(1);
      v |= static_cast<std::uint64_t>(b & 0x7f) << shift;
      if ((b & 0x80) == 0) break;
    }
    return v;
  }
  void operator()(std::string& s) {
    const auto n = std::min<std::uint64_t>(number(), in.size());
    s.assign(in.substr(0, n));
    in.remove_prefix(n);
  }
  void operator()(std::uint64_t& v) { v = number(); }
  void operator()(unsigned& v) { v = static_cast<unsigned>(number()); }
  void operator()(system_time& t) { t = system_time(system_time::duration(static_cast<system_time::rep>(number()))); }
  template <typename E>
    requires std::is_enum_v<E>
  void operator()(E& e) { e = static_cast<E>(number()); }
  template <typename T>
  void operator()(std::optional<T>& o) {
    o.reset();
    if (number() != 0) (*this)(o.emplace());
  }
  template <typename T>
  void operator()(std::vector<T>& v) {
    v.clear();
    for (auto n = number(); n > 0 && !in.empty(); --n) (*this)(v.emplace_back());
  }
  template <typename A, typename B>
  void operator()(std::pair<A, B>& p) {
    (*this)(p.first);
    (*this)(p.second);
  }
};

}  // namespace

std::string pack(const record::decision_record& r) {
  // Built in a reused buffer, then copied once at its exact size: the copy is what a
  // relayed connection holds.
  thread_local std::string scratch;
  scratch.clear();
  packer p{scratch};
  each_field(p, r);
  return std::string(scratch);
}

record::decision_record unpack(std::string_view packed) {
  record::decision_record r;
  unpacker u{packed};
  each_field(u, r);
  return r;
}

void relayed_line::take(emit_once& line) {
  line.decide();
  // The close line needs neither the decision's notes nor its process: not kept.
  auto& rec = line.record;
  forget_decided(rec, *line.decided_notes);
  packed_ = pack(rec);
#ifndef NDEBUG
  if (record::render_json_line(unpack(packed_)) != record::render_json_line(rec)) {
    std::fprintf(stderr, "airlock: a decision record field is not packed (proxy/steps.cpp each_field)\n");
    std::abort();
  }
#endif
  started_ = line.started;
  line.armed = false;
}

void relayed_line::relayed(const relay_totals& totals, std::uint64_t sent_up, const limiter::ticket& ticket) noexcept {
  totals_ = totals;
  totals_->up += sent_up;
  spent_ = ticket.spent();
}

relayed_line::~relayed_line() {
  if (packed_.empty()) return;
  try {
    auto rec = unpack(packed_);
    make_close_line(rec, 0, started_);
    if (!note_.empty()) rec.notes.push_back(std::move(note_));
    if (totals_) {
      rec.bytes_up = totals_->up;
      rec.bytes_down = totals_->down;
      if (totals_->idle_timeout) rec.notes.push_back("idle_timeout");
      if (totals_->reset == reset_by::client) rec.notes.push_back("client_reset");
      if (totals_->reset == reset_by::upstream) rec.notes.push_back("upstream_reset");
      if (totals_->cut) cut_by_budget(rec, spent_);
    }
    sink_.emit(rec);
  } catch (...) {
    std::fprintf(stderr, "airlock: a close line was lost (out of memory)\n");
  }
}

namespace {

// Opens `s` for `ep` and starts connecting: 0 once the connect is under way (or done),
// else the errno that stopped it (EMFILE or ENFILE from socket(): out of descriptors).
int start_connect(tcp::socket& s, const tcp::endpoint& ep) noexcept {
  boost::system::error_code ec;
  if (s.is_open()) s.close(ec);
  ec = open_nonblocking(s, ep.protocol());
  // Small writes go out at once (a TLS alert, a request head, an interactive protocol's
  // keystrokes): a relay must not add Nagle's delay on top of the client's. (The client's
  // side inherits it from the listener.)
  if (!ec) s.set_option(tcp::no_delay(true), ec);
  if (ec) return ec.value() != 0 ? ec.value() : EIO;
  if (::connect(s.native_handle(), ep.data(), static_cast<socklen_t>(ep.size())) == 0) return 0;
  return errno == EINPROGRESS || errno == EINTR ? 0 : errno;  // EINTR: the connect goes on, as with EINPROGRESS
}

// Whether the connect under way is established already, and if so `first` sent (what the
// socket took of it: `sent`). To an origin on a local link (a veth, a bridge) the handshake
// has usually finished by the time connect() returns EINPROGRESS, its SYN-ACK handled on the
// way; then one call spares the wait for writable, the epoll_ctl that arms it and the
// SO_ERROR read after it. With bytes to send that call is the send: a socket still
// connecting refuses it with EAGAIN, one whose connect failed with the connect's error.
// With none it is getpeername, which fails in both cases.
enum class connect_state { established, under_way, failed };
connect_state check_established(tcp::socket& s, std::span<const std::byte> first, std::size_t& sent) noexcept {
  if (first.empty()) {
    sockaddr_storage peer{};
    socklen_t size = sizeof peer;
    return ::getpeername(s.native_handle(), reinterpret_cast<sockaddr*>(&peer), &size) == 0
               ? connect_state::established
               : connect_state::under_way;  // or failed: the wait for writable tells
  }
  for (;;) {
    const auto n = ::send(s.native_handle(), first.data(), first.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n > 0) {
      sent = static_cast<std::size_t>(n);
      return connect_state::established;
    }
    if (n < 0 && errno == EINTR) continue;
    return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) ? connect_state::under_way : connect_state::failed;
  }
}

// How the connect under way ended, once the socket is writable.
bool connected(tcp::socket& s) noexcept {
  int error = 0;
  socklen_t size = sizeof error;
  return ::getsockopt(s.native_handle(), SOL_SOCKET, SO_ERROR, &error, &size) == 0 && error == 0;
}

}  // namespace

// By hand rather than asio::async_connect, which polls the writable socket once more
// before it reads SO_ERROR: SO_ERROR alone says how the connect went.
asio::awaitable<upstream_reached> connect_any(tcp::socket& upstream, const std::vector<asio::ip::address>& addresses,
                                              std::uint16_t port, std::chrono::steady_clock::duration limit,
                                              std::span<const std::byte> first) {
  // To an origin on a local link the connect is most often established before there is a
  // wait (check_established).
  base::cancel_after_first_wait deadline(upstream, limit, base::when_due::close);
  upstream_reached out;
  for (const auto& address : addresses) {
    const tcp::endpoint ep(address, port);
    if (const int error = start_connect(upstream, ep); error != 0) {
      out.out_of_descriptors = error == EMFILE || error == ENFILE;
      if (out.out_of_descriptors) break;  // no other address needs fewer
      continue;
    }
    std::size_t sent = 0;
    const auto state = check_established(upstream, first, sent);
    if (state == connect_state::established) co_return upstream_reached{ep, false, sent};
    if (state == connect_state::failed) continue;  // refused, unreachable: the next address
    deadline.arm();
    auto [ec] = co_await upstream.async_wait(tcp::socket::wait_write, nothrow);
    if (deadline.passed()) break;
    if (!ec && connected(upstream)) co_return upstream_reached{ep};
  }
  boost::system::error_code ignored;
  upstream.close(ignored);
  co_return out;
}

asio::awaitable<upstream_reached> connect_resolved(tcp::socket& upstream, proxy_context& ctx,
                                                   const policy::compiled_policy& p, const policy::domain_name* name,
                                                   const std::vector<asio::ip::address>& targets, std::uint16_t port,
                                                   std::span<const std::byte> first) {
  const auto started = std::chrono::steady_clock::now();
  auto reached = co_await connect_any(upstream, targets, port, ctx.settings.connect_limit, first);
  if (reached || reached.out_of_descriptors) co_return reached;
  const auto left = ctx.settings.connect_limit - (std::chrono::steady_clock::now() - started);
  if (!name || targets.empty() || left <= std::chrono::steady_clock::duration::zero()) co_return reached;
  // The other family, from the cache only (nothing is asked upstream on a failure path).
  auto others = dns::cached_addresses_of(ctx.cache, *name,
                                         targets.front().is_v6() ? dns::wire::type::a : dns::wire::type::aaaa);
  std::erase_if(others, [&](const asio::ip::address& a) { return !permitted(ctx, p, a, port); });
  if (others.empty()) co_return reached;
  co_return co_await connect_any(upstream, others, port, left, first);
}

asio::awaitable<void> refuse_unreached(tcp::socket& client, sniffed::kind channel, emit_once& line,
                                       const upstream_reached& r) {
  if (r.out_of_descriptors) {
    co_await refuse_over_limit(client, channel, line, "open_files");
    co_return;
  }
  line.record.reason = reason::upstream_unreachable;
  co_await refuse(client, channel, line);
}

relay_plan::relay_plan() = default;
relay_plan::~relay_plan() = default;

asio::awaitable<void> judge_then_relay(tcp::socket client, tcp::endpoint peer, proxy_context& ctx, judge_fn judge) {
  auto ticket = ctx.limits.accept();
  relayed_line line(ctx.log);
  tcp::socket upstream(client.get_executor());
  relay_plan plan;
  if (!co_await judge(client, peer, upstream, ctx, ticket, line, plan)) co_return;
  auto* gate = plan.requests ? &plan.requests->gate() : nullptr;
  const auto totals = co_await relay(client, upstream, idle_limit(ctx), &ticket, gate);
  line.relayed(totals, plan.sent_up, ticket);
  if (gate) {
    // Allowed requests have no lines of their own: the connection's close line counts them.
    line.note("requests:" + std::to_string(gate->requests()));
    if (gate->refused() != 0) co_await plan.requests->answer(client);
  }
}

}  // namespace airlock::proxy::steps
