// Airlock's own resolution of an allowed name and its connect (proxy/upstream_connect.hpp).
#include "proxy/upstream_connect.hpp"

#include "base/deadline.hpp"
#include "base/deadline_watch.hpp"
#include "dns/lookup.hpp"
#include "policy/own_addresses.hpp"
#include "proxy/own_socket.hpp"
#include "proxy/refusals.hpp"
#include "proxy/steps.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include <algorithm>
#include <cerrno>
#include <iterator>

#include <sys/socket.h>

namespace airlock::proxy::steps {

namespace asio = boost::asio;
using asio::ip::tcp;
using base::nothrow;
using policy::reason;

namespace {

// An address airlock may connect to for this policy and port (policy/own_addresses.hpp).
bool permitted(proxy_context& ctx, const policy::compiled_policy& p, const asio::ip::address& a, std::uint16_t port) {
  return policy::reachable(p, ctx.policies.own().get(), a, port);
}

}  // namespace

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

asio::awaitable<bool> connect_and_send_first(asio::ip::tcp::socket& client, asio::ip::tcp::socket& upstream,
                                             proxy_context& ctx, const policy::compiled_policy& p,
                                             const policy::domain_name* name,
                                             const std::vector<asio::ip::address>& targets, std::uint16_t port,
                                             std::span<const std::byte> first, sniffed::kind channel,
                                             record::decision_line& line, std::uint64_t& sent_up) {
  const auto reached = co_await connect_resolved(upstream, ctx, p, name, targets, port, first);
  if (!reached) {
    co_await refuse_unreached(client, channel, line, reached);
    co_return false;
  }
  auto& rec = line.record();
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

}  // namespace airlock::proxy::steps
