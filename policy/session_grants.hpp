#pragma once
// Allowances a session is given while it runs, through the control API: HOST[:PORT], a
// "*.suffix" or a family's hosts, until a tool call ends, for a time, or for N connections
// (whichever ends first), and never past the session. A grant turns only a decision that
// lacked an allow rule (host_not_allowed, port_not_allowed) into an allow: a deny rule, a
// special address and inspection stand as the policy has them.
//
// Run-time state beside the snapshot, as redirect allowances are (a reload keeps it).
// Time is passed in. The DNS server peeks (resolving uses nothing); a connection takes
// (a use is counted, and when the grant cuts, the connection gets a cut switch the grant
// keeps weakly: a grant that is revoked, expires, loses its tool call or its session pulls
// every switch of the connections it let through). A grant used up cuts nothing: its
// connections were what it was for.
//
// Bounded: at most `per_session` live grants per session and `total` in all; a request
// beyond is refused, never made room for (the oldest grant is someone's promise too).
// One mutex; a connection takes it only when its session's decision lacked a rule and
// some grant is live (one atomic says whether any is).
#include "base/cut_switch.hpp"
#include "policy/config.hpp"
#include "policy/domain_name.hpp"
#include "policy/port_protocol.hpp"

#include <boost/system/result.hpp>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace airlock::policy {

class session_grants {
 public:
  using clock = std::chrono::steady_clock;

  struct limits {
    std::size_t per_session = 256;
    std::size_t total = 4096;
  };

  struct request {
    std::string session;
    std::string allow;                 // as asked ("HOST[:PORT]", "*.suffix", "family:NAME"), for views and lines
    std::vector<rule_config> targets;  // host and wildcard rules with their ports
    std::optional<clock::duration> lasts;
    std::optional<std::uint32_t> connections;
    std::string tool_call;  // not empty: the grant ends when the session's tool call is another
    bool cut = true;
    std::string by;  // who asked, as they said
  };

  struct view {
    std::string id;
    std::string session;
    std::string allow;
    std::string tool_call;
    std::string by;
    std::optional<clock::duration> expires_in;
    std::optional<std::uint32_t> connections_left;
    std::uint64_t used = 0;  // connections it let through
    bool cut = true;

    std::string rule() const { return "grant:" + id; }
  };

  enum class end_reason : std::uint8_t { revoked, expired, tool_call_ended, session_closed, used_up };

  struct ended {
    view grant;
    end_reason why;
    std::size_t cut = 0;  // connections whose switch this end pulled
  };

  enum class refusal : std::uint8_t { session_full, total_full };

  // What a decision takes from a grant.
  struct use {
    std::string rule;  // "grant:ID"
    port_protocol protocol = port_protocol::any;
    std::shared_ptr<base::cut_switch> cut;  // take() of a grant that cuts; else null
  };

  session_grants() : session_grants(limits{}) {}
  explicit session_grants(limits l) : limits_(l) {}

  boost::system::result<view, refusal> add(request r, clock::time_point now);
  std::vector<view> list(std::string_view session, clock::time_point now);
  // True when the grant was live (its end is then in the next drain_ended()).
  bool revoke(std::string_view session, std::string_view id, clock::time_point now);
  // The session's tool call is now `current`: grants made under another end.
  void tool_call_changed(std::string_view session, std::string_view current, clock::time_point now);
  // The session closed: every grant of it ends.
  void forget(std::string_view session, clock::time_point now);
  // Ends what expired (also noticed on every other call).
  void sweep(clock::time_point now);
  // The grants that ended since the last call, for their log lines.
  std::vector<ended> drain_ended();

  // A live grant of `session` for `name` on `port` whose protocol admits `spoken`. peek
  // leaves it as it is (port 0: any port, as DNS asks); take counts a connection.
  std::optional<use> peek(std::string_view session, const domain_name& name, std::uint16_t port, wire spoken,
                          clock::time_point now);
  std::optional<use> take(std::string_view session, const domain_name& name, std::uint16_t port, wire spoken,
                          clock::time_point now);

  std::size_t size() const;

 private:
  struct grant {
    view what;
    std::vector<rule_config> targets;
    std::optional<clock::time_point> expires;
    std::vector<std::weak_ptr<base::cut_switch>> connections;
  };
  using session_list = std::vector<std::unique_ptr<grant>>;  // oldest first

  std::optional<use> find(std::string_view session, const domain_name& name, std::uint16_t port, wire spoken,
                          clock::time_point now, bool consume);
  // Ends grants of `list` (or all) that `ending` picks, under the mutex.
  template <typename Pred>
  void end_if(session_list& list, end_reason why, Pred ending);
  void sweep_locked(clock::time_point now, bool always = false);
  void publish_count() noexcept { live_.store(total_, std::memory_order_release); }

  const limits limits_;
  mutable std::mutex mutex_;
  std::map<std::string, session_list, std::less<>> sessions_;
  std::vector<ended> ended_;
  std::size_t total_ = 0;
  std::uint64_t next_id_ = 1;
  clock::time_point last_sweep_{};
  std::atomic<std::size_t> live_{0};  // total_, read without the mutex: none live, nothing to ask
};

std::string_view to_string(session_grants::end_reason r) noexcept;

}  // namespace airlock::policy
