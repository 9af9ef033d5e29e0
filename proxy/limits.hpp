#pragma once
// Caps and per-session budgets (policy::limits_config), enforced where a connection is
// admitted and where its bytes move. Copies of a limiter share one set of counters (each
// event loop's proxy context holds a copy), guarded by one mutex: a connection takes it
// when admitted, when it closes, and per relayed step (twice when a byte budget applies:
// the room left, then the bytes moved), never while waiting.
//
// A connection holds a ticket for its whole life: the ticket counts it open (and
// pending until its first bytes are judged), names the limit that refuses it, and meters
// its bytes against its session's budgets.
#include "core/token_bucket.hpp"
#include "policy/config.hpp"
#include "proxy/relay.hpp"

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

namespace airlock::proxy {

class limiter {
  struct usage {
    std::uint64_t open = 0;
    core::token_bucket bucket;
    std::uint64_t bytes_up = 0;
    std::uint64_t bytes_down = 0;
    std::uint64_t pending = 0;  // open and not judged yet
  };
  struct state;

 public:
  explicit limiter(const policy::limits_config& limits) : state_(std::make_shared<state>(limits)) {}

  class ticket final : public relay_meter {
   public:
    ~ticket() override;
    ticket(const ticket&) = delete;
    ticket& operator=(const ticket&) = delete;

    // The daemon-wide cap this connection is over ("connections", "pending_handshakes"),
    // or empty: then admit() decides for its session.
    std::string_view refused() const noexcept { return refused_; }
    // Counts the connection against its session (open, and pending until judged); the
    // limit it is over, or empty.
    std::string_view admit(const std::string& session);
    // Its first bytes are judged: it no longer counts as a pending handshake.
    void judged() noexcept;
    // The budget a cut connection spent ("session_bytes_up" / "session_bytes_down").
    std::string_view spent() const noexcept { return spent_; }
    bool moved(bool up, std::uint64_t bytes) noexcept override;
    std::uint64_t room(bool up) const noexcept override;

   private:
    friend class limiter;
    explicit ticket(std::shared_ptr<state> s);
    std::shared_ptr<state> owner_;
    usage* session_ = nullptr;
    bool pending_ = true;
    std::string_view refused_;
    std::string_view spent_;
  };

  ticket accept() { return ticket(state_); }

  std::uint64_t open() const noexcept;
  std::uint64_t pending() const noexcept;

 private:
  struct state {
    explicit state(const policy::limits_config& l) : limits(l) {}
    const policy::limits_config limits;
    std::mutex mutex;
    std::uint64_t open = 0;
    std::uint64_t pending = 0;
    // One entry per session seen (bounded by the sessions the policy and the control API
    // know); kept after the last connection closes so rates and budgets carry over. Nodes
    // never move, so a ticket keeps a pointer to its session's.
    std::unordered_map<std::string, usage> sessions;
  };
  std::shared_ptr<state> state_;
};

}  // namespace airlock::proxy
