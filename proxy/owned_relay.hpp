#pragma once
// The relay of a judged connection that owns it: the sockets and whatever must live as long
// as they do move into the relay's own heap object, and the coroutine that judged the
// connection ends. An idle relayed connection is then that one object and its sockets'
// registrations with the loop: no coroutine frame is kept while it idles (an awaited relay
// keeps its caller's stack, the co_spawn entry frame up; proxy/README.md, "Memory per idle
// connection").
//
// `Tail` holds `client` and `upstream` (the relayed sockets) and says `meter()`, `gate()`
// and `cut()` (each may be null) for relay(); `relayed(totals)` is called once, on the loop,
// when the relay ends, and may move out what must outlive it (an answer still to write).
// When the loop is torn down with the relay pending, `relayed` is not called: the tail is
// destroyed as a coroutine's locals would be (a decision_line among them still leaves).
#include "proxy/relay_op.hpp"

#include <chrono>
#include <utility>

namespace airlock::proxy {

namespace detail {
// A base, so the tail is built before relay_op, which keeps references to its sockets.
template <typename Tail>
struct tail_holder {
  Tail tail;
};
}  // namespace detail

template <typename Tail>
class owned_relay final : private detail::tail_holder<Tail>, public relay_op {
 public:
  owned_relay(Tail&& t, std::chrono::steady_clock::duration idle_limit)
      : detail::tail_holder<Tail>{std::move(t)},
        relay_op(&owned_relay::end, this->tail.client, this->tail.upstream, idle_limit, this->tail.meter(),
                 this->tail.gate(), this->tail.cut()) {}

 private:
  static void end(relay_op& op, bool ran) {
    auto* self = static_cast<owned_relay*>(&op);
    if (ran) self->tail.relayed(self->totals());
    delete self;
  }
};

// Relays `tail`'s sockets until the relay ends; returns at once.
template <typename Tail>
void relay_owned(Tail tail, std::chrono::steady_clock::duration idle_limit) {
  (new owned_relay<Tail>(std::move(tail), idle_limit))->start();
}

}  // namespace airlock::proxy
