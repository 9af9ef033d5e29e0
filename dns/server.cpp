// DNS over UDP: the receive loop (dns/server.hpp). TCP is in tcp_server.cpp.
#include "dns/server.hpp"

#include "base/deadline.hpp"
#include "base/spawn.hpp"
#include "dns/reply_source.hpp"

#include <boost/asio/post.hpp>
#include <boost/asio/this_coro.hpp>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <sys/socket.h>

namespace airlock::dns {
namespace {

namespace asio = boost::asio;
using asio::ip::udp;

void report(const char* what) { std::fprintf(stderr, "airlock: dns query: internal error: %s\n", what); }

// One reply sent from `source` (the address its query went to), waiting while the socket
// will not take it. A failed send (client gone, ICMP unreachable) concerns this client only.
asio::awaitable<void> send_reply(udp::socket& socket, std::string reply, udp::endpoint client, reply_source source) {
  iovec iov{reply.data(), reply.size()};
  msghdr h{};
  h.msg_name = client.data();
  h.msg_namelen = static_cast<socklen_t>(client.size());
  h.msg_iov = &iov;
  h.msg_iovlen = 1;
  source.attach(h);
  for (;;) {
    if (::sendmsg(socket.native_handle(), &h, MSG_DONTWAIT) >= 0) co_return;
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK && errno != ENOBUFS) co_return;
    auto [ec] = co_await socket.async_wait(udp::socket::wait_write, base::nothrow);
    if (ec) co_return;
  }
}

asio::awaitable<void> finish_datagram(udp::socket& socket, started_query query, udp::endpoint client,
                                      reply_source source) {
  auto reply = co_await query.finish();
  if (!reply) co_return;
  co_await send_reply(socket, std::move(*reply), client, source);
}

// Datagrams read with one recvmmsg, and the replies that are ready at once sent with one
// sendmmsg: two system calls for a burst of queries instead of two per query.
class datagram_batch {
 public:
  static constexpr unsigned capacity = 16;
  static constexpr std::size_t room = 65536;  // any UDP payload: nothing is ever truncated

  datagram_batch() : storage_(capacity * room) {
    for (unsigned i = 0; i < capacity; ++i) {
      in_iov_[i] = {storage_.data() + i * room, room};
      auto& h = in_[i].msg_hdr;
      h.msg_name = &from_[i];
      h.msg_iov = &in_iov_[i];
      h.msg_iovlen = 1;
      h.msg_control = in_control_[i].bytes.data();
    }
  }
  datagram_batch(const datagram_batch&) = delete;
  datagram_batch& operator=(const datagram_batch&) = delete;

  // Reads what the socket holds, at most `capacity` datagrams; 0 when it holds none (or
  // reports an error, which concerns one client: the next read goes on).
  unsigned receive(int fd) noexcept {
    // The input fields recvmmsg overwrites.
    for (auto& m : in_) {
      m.msg_hdr.msg_namelen = sizeof(sockaddr_storage);
      m.msg_hdr.msg_controllen = reply_source::control_room;
    }
    const int n = ::recvmmsg(fd, in_.data(), capacity, MSG_DONTWAIT, nullptr);
    return n > 0 ? static_cast<unsigned>(n) : 0;
  }
  std::span<const std::byte> packet(unsigned i) const noexcept { return {storage_.data() + i * room, in_[i].msg_len}; }
  udp::endpoint client(unsigned i) const {
    udp::endpoint ep;
    const auto len = std::min<std::size_t>(in_[i].msg_hdr.msg_namelen, ep.capacity());
    std::memcpy(ep.data(), &from_[i], len);
    ep.resize(len);
    return ep;
  }
  // The address datagram i was sent to: where its answer leaves from.
  reply_source source(unsigned i) const noexcept { return reply_source::of(in_[i].msg_hdr); }

  // Queues `reply` to datagram i's sender.
  void reply(unsigned i, std::string reply) {
    const unsigned k = replies_++;
    out_text_[k] = std::move(reply);
    out_iov_[k] = {out_text_[k].data(), out_text_[k].size()};
    auto& h = out_[k].msg_hdr;
    h = {};
    h.msg_name = &from_[i];
    h.msg_namelen = in_[i].msg_hdr.msg_namelen;
    h.msg_iov = &out_iov_[k];
    h.msg_iovlen = 1;
    out_source_[k] = source(i);
    out_source_[k].attach(h);
  }
  // Sends the queued replies; one the socket will not take now is sent on a coroutine.
  void send(udp::socket& socket, const asio::any_io_executor& ex) {
    unsigned done = 0;
    while (done < replies_) {
      const int n = ::sendmmsg(socket.native_handle(), out_.data() + done, replies_ - done, MSG_DONTWAIT);
      if (n > 0) {
        done += static_cast<unsigned>(n);
        continue;
      }
      const int error = errno;
      if (error == EINTR) continue;
      if (error == EAGAIN || error == EWOULDBLOCK || error == ENOBUFS) {
        for (; done < replies_; ++done) {
          udp::endpoint to;
          const auto& h = out_[done].msg_hdr;
          std::memcpy(to.data(), h.msg_name, std::min<std::size_t>(h.msg_namelen, to.capacity()));
          to.resize(std::min<std::size_t>(h.msg_namelen, to.capacity()));
          base::spawn_session(ex, send_reply(socket, std::move(out_text_[done]), to, out_source_[done]), report);
        }
        break;
      }
      ++done;  // this reply's client is unreachable: the others still get theirs
    }
    for (unsigned k = 0; k < replies_; ++k) out_text_[k].clear();
    replies_ = 0;
  }

 private:
  std::vector<std::byte> storage_;
  std::array<mmsghdr, capacity> in_{};
  std::array<iovec, capacity> in_iov_{};
  std::array<sockaddr_storage, capacity> from_{};
  struct alignas(cmsghdr) control_buffer {
    std::array<unsigned char, reply_source::control_room> bytes;
  };
  std::array<control_buffer, capacity> in_control_{};
  std::array<mmsghdr, capacity> out_{};
  std::array<iovec, capacity> out_iov_{};
  std::array<std::string, capacity> out_text_{};
  std::array<reply_source, capacity> out_source_{};
  unsigned replies_ = 0;
};

// One datagram: answered in the batch when nothing has to be waited for (a cache hit, a
// denial, an error), on a coroutine of its own otherwise (the upstream, a denial's process
// lookup), so a slow upstream never holds up other clients.
void handle_datagram(udp::socket& socket, query_context& ctx, const asio::any_io_executor& ex, datagram_batch& batch,
                     unsigned i) noexcept {
  try {
    const auto client = batch.client(i);
    started_query query(ctx, client.address(), client.port(), true);
    if (query.begin(batch.packet(i), ex)) {
      if (auto& reply = query.reply()) batch.reply(i, std::move(*reply));
      return;  // the line is emitted as `query` goes
    }
    base::spawn_session(ex, finish_datagram(socket, std::move(query), client, batch.source(i)), report);
  } catch (const std::exception& e) {  // as spawn_session would: loud, and this query only
    report(e.what());
  } catch (...) {
    report("unknown exception");
  }
}

}  // namespace

asio::awaitable<void> serve_udp(udp::socket& socket, query_context& ctx) {
  auto ex = co_await asio::this_coro::executor;
  // Answers leave from the address their query went to (dns/reply_source.hpp). The
  // listeners are v6-only where IPv6 (daemon/listen.cpp): one family per socket.
  boost::system::error_code family_unknown;
  ask_for_destinations(socket.native_handle(), socket.local_endpoint(family_unknown).address().is_v6());
  // Datagrams already queued are read without suspending, this many at most before the
  // loop lets other work on the event loop run.
  constexpr unsigned burst = 64;
  auto batch = std::make_unique<datagram_batch>();
  for (;;) {
    unsigned handled = 0;
    while (handled < burst && socket.is_open()) {
      const unsigned n = batch->receive(socket.native_handle());
      if (n == 0) break;
      for (unsigned i = 0; i < n; ++i) handle_datagram(socket, ctx, ex, *batch, i);
      batch->send(socket, ex);
      handled += n;
    }
    if (!socket.is_open()) co_return;
    if (handled >= burst) {
      co_await asio::post(ex, asio::use_awaitable);  // others' turn; the socket still has more
      continue;
    }
    // Nothing queued: wait for the next datagram (epoll tells; nothing is read twice).
    auto [ec] = co_await socket.async_wait(udp::socket::wait_read, base::nothrow);
    if (ec == asio::error::operation_aborted || !socket.is_open()) co_return;
  }
}

}  // namespace airlock::dns
