#pragma once
// The bidirectional copy once a connection is allowed: half-close is passed on (FIN one
// way does not end the other), a reset is passed on as a reset (and a budget cut ends both
// ways with one), an idle watchdog ends connections where nothing moves, and the byte
// counts and the ending end up in the decision line.
//
// Bytes are held only while they move, so an idle connection holds no buffer at all. Each
// direction starts by copying through a 16 KiB buffer (two system calls a step, no pipe:
// what a request and its small answer need); once a read fills that buffer the direction
// is bulk and moves socket -> pipe -> socket with splice(2), nothing read into airlock.
// Buffers and pipes come from per-thread pools and go back empty; where splice is refused
// (EINVAL) the copy goes on. A bulk direction keeps moving while its reads come back full
// (up to 16 steps, then it waits its turn in the loop), through pipes of 1 MiB where the
// kernel allows it. After a copied step that was not full, the loop's last report says
// whether the peer's FIN is queued behind the bytes (proxy/edge_wait.hpp): if so it leaves
// with them, as one segment, without a read of its own. A meter's room bounds every step, so
// a byte budget is overrun by one byte at most.
//
// An idle relayed connection costs one small heap object, two pending waits (either
// socket readable; a way whose socket was read empty waits inside that object, with no
// epoll_ctl, from its first wait on for sockets airlock registered: proxy/edge_wait.hpp) and
// a node in its event loop's idle watchdog (one timer per loop):
// relay() is a single asynchronous operation driven by completion handlers, not a
// coroutine per direction joined with && and || (that shape weighed several KiB per
// connection; see proxy/README.md, "Memory per idle connection"). The daemon's connections
// do not await it: proxy/owned_relay.hpp's relay_owned moves the sockets into the same
// relay, so that no coroutine frame is kept while a connection idles. relay() is for a
// caller that keeps its sockets and its coroutine (the relay's own tests).
#include "base/cut_switch.hpp"
#include "proxy/request_gate.hpp"

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <chrono>
#include <cstdint>
#include <limits>

namespace airlock::proxy {

// Which peer ended the relay with a reset (or a socket error): the other was reset too.
enum class reset_by : std::uint8_t { none, client, upstream };

struct relay_totals {
  std::uint64_t up = 0;    // client -> upstream
  std::uint64_t down = 0;  // upstream -> client
  bool idle_timeout = false;
  bool cut = false;  // the meter said stop (a session's byte budget is spent), or the cut switch; both were reset
  bool grant_ended = false;  // the cut was the switch's: the grant that let the connection through ended
  reset_by reset = reset_by::none;
};

// Told about every chunk as it moves; returning false ends the relay (both ways).
class relay_meter {
 public:
  virtual ~relay_meter() = default;
  virtual bool moved(bool up, std::uint64_t bytes) noexcept = 0;
  // Bytes a direction may still move. A step reads at most one more than this, so a cut
  // comes at most a byte past a budget whatever the size of a step (up to a pipe's 1 MiB).
  virtual std::uint64_t room(bool /*up*/) const noexcept { return std::numeric_limits<std::uint64_t>::max(); }
};

// With a gate (proxy/request_gate.hpp), the client's bytes go up only as the gate admits
// them: that way copies through its buffer and never splices. Once the gate refuses a
// request, nothing more is read from the client; the upstream is shut for sending, and
// the relay ends when it has closed (having answered what went on before) or the idle
// limit passes, leaving the client open to hear the refusal.
//
// Relays until both ways are done, the idle limit passes or the meter cuts. When it ends
// with a reset (`totals.reset`, or a cut), both sockets come back closed: that close is what
// sent the resets. When both ways ended with a FIN they come back closed too (the last FIN
// is sent by the close). After the idle limit they are left open, shut both ways.
//
// With a cut switch (base/cut_switch.hpp), pulling it ends the relay at once, idle or not,
// as a cut: both peers are reset.
boost::asio::awaitable<relay_totals> relay(boost::asio::ip::tcp::socket& client, boost::asio::ip::tcp::socket& upstream,
                                           std::chrono::steady_clock::duration idle_limit, relay_meter* meter = nullptr,
                                           request_gate* gate = nullptr, base::cut_switch* cut = nullptr);

}  // namespace airlock::proxy
