#pragma once
// Caps and per-session budgets (policy::limits_config), enforced where a connection is
// admitted and where its bytes move. Copies of a limiter (one per event loop's proxy
// context) share one set of counters, atomics all: no connection takes a lock. The one
// mutex guards the map of sessions, and a loop takes it only the first time it meets a
// session; after that the loop finds the session's counters in its own copy's index.
//
// A connection holds a ticket for its whole life: the ticket counts it open (and
// pending until its first bytes are judged), names the limit that refuses it, and meters
// its bytes against its session's budgets.
#include "base/token_bucket.hpp"
#include "policy/config.hpp"
#include "proxy/relay.hpp"

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

namespace airlock::proxy {

class limiter {
  struct usage {
    usage(double rate, base::token_bucket::clock::time_point now) : bucket(rate, 2 * rate, now) {}
    std::atomic<std::uint64_t> open = 0;
    std::atomic<std::uint64_t> pending = 0;  // open and not judged yet
    std::atomic<std::uint64_t> bytes_up = 0;
    std::atomic<std::uint64_t> bytes_down = 0;
    base::token_bucket bucket;
  };
  struct state;
  // A loop's own index of the sessions it has met: read and grown by that loop only.
  using session_index = std::unordered_map<std::string, usage*>;

 public:
  explicit limiter(const policy::limits_config& limits)
      : state_(std::make_shared<state>(limits)), index_(std::make_unique<session_index>()) {}
  // A copy shares the counters and starts an index of its own (it serves another loop).
  limiter(const limiter& other) : state_(other.state_), index_(std::make_unique<session_index>()) {}
  limiter& operator=(const limiter& other) {
    if (this != &other) *this = limiter(other);
    return *this;
  }
  limiter(limiter&&) noexcept = default;
  limiter& operator=(limiter&&) noexcept = default;

  class ticket final : public relay_meter {
   public:
    ~ticket() override;
    ticket(const ticket&) = delete;
    ticket& operator=(const ticket&) = delete;
    // Into the relay that owns the connection once it is judged; the moved-from counts nothing.
    ticket(ticket&& other) noexcept;
    ticket& operator=(ticket&&) = delete;

    // The daemon-wide cap this connection is over ("connections", "pending_handshakes"),
    // or empty: then admit() decides for its session.
    std::string_view refused() const noexcept { return refused_; }
    // Counts the connection against its session (open, and pending until judged); the
    // limit it is over, or empty. Called on the loop of the limiter that issued the ticket.
    std::string_view admit(const std::string& session);
    // Its first bytes are judged: it no longer counts as a pending handshake.
    void judged() noexcept;
    // The budget a cut connection spent ("session_bytes_up" / "session_bytes_down").
    std::string_view spent() const noexcept { return spent_; }
    bool moved(bool up, std::uint64_t bytes) noexcept override;
    std::uint64_t room(bool up) const noexcept override;

   private:
    friend class limiter;
    ticket(std::shared_ptr<state> s, session_index& index);
    std::shared_ptr<state> owner_;
    session_index* index_;  // the issuing limiter's; used by admit() only
    usage* session_ = nullptr;
    bool pending_ = true;
    std::string_view refused_;
    std::string_view spent_;
  };

  ticket accept() { return ticket(state_, *index_); }

  std::uint64_t open() const noexcept;
  std::uint64_t pending() const noexcept;
  // The daemon-wide cap reached now ("connections", "pending_handshakes"), or empty. While
  // one is, the listeners stop accepting: the kernel's listen queue holds new connections,
  // as HAProxy's maxconn does, instead of airlock accepting them only to reset them.
  std::string_view full() const noexcept;

 private:
  struct state {
    explicit state(const policy::limits_config& l) : limits(l) {}
    const policy::limits_config limits;
    std::atomic<std::uint64_t> open = 0;
    std::atomic<std::uint64_t> pending = 0;
    // One entry per session seen (bounded by the sessions the policy and the control API
    // know); kept after the last connection closes so rates and budgets carry over. Nodes
    // never move, so the loops' indexes and the tickets keep pointers to them.
    std::mutex mutex;
    std::unordered_map<std::string, usage> sessions;
  };
  std::shared_ptr<state> state_;
  std::unique_ptr<session_index> index_;
};

}  // namespace airlock::proxy
