#pragma once
// One-shot, short-lived allowances made by redirects. When an inspected (or plain HTTP)
// response from an allowed host redirects to a host that policy `redirects:` lets it
// send clients to, the proxy grants that session the target host once: DNS may resolve
// it while the grant lasts (peek: not consumed), and the next connection to it takes
// the grant (take: consumed). A redirect that no entry allows is remembered for a short
// while (refused), so the denial that follows can say redirect_not_allowed and name the
// host that sent the client there.
//
// Run-time state, not part of a snapshot: a reload keeps it. Time is passed in (`now`),
// so tests drive it; expired entries are swept as calls come. Bounded: at most
// `per_session` entries per session and `total` in all (grants and refusals each); the
// oldest goes first. One mutex: every call is a few hash lookups. A connection to a host
// the policy does not allow asks here (take, then refused_from); while nothing is held,
// which is nearly always, it learns so from one atomic and takes no lock.
#include "policy/domain_name.hpp"
#include "policy/port_protocol.hpp"

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <list>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

namespace airlock::policy {

class redirect_grants {
 public:
  using clock = std::chrono::steady_clock;
  static constexpr clock::duration default_ttl = std::chrono::seconds(30);
  static constexpr clock::duration refusal_ttl = std::chrono::seconds(30);

  struct limits {
    std::size_t per_session = 64;
    std::size_t total = 4096;
  };

  // What a grant or refusal remembers.
  struct origin {
    std::string from_host;   // the host whose response redirected
    std::string rule;        // "FILE:LINE" of the redirects: entry (empty for a refusal)
    std::uint16_t port = 0;  // the port the redirect named (0: any)
    std::uint32_t uses = 1;  // connections it still lets through
    // What the redirect's scheme speaks there: https: tls, http: http. A grant is for
    // the web request the redirect sent the client to, never for other bytes on its port.
    port_protocol protocol = port_protocol::any;
  };
  // Each redirect adds a use, up to this many (a client fetching in parallel after as many
  // redirects gets as many connections).
  static constexpr std::uint32_t max_uses = 16;

  redirect_grants() : redirect_grants(limits{}) {}
  explicit redirect_grants(limits l);

  // Lets `session` reach `to_host` once until now + ttl. Another grant for the same host
  // adds a use (up to max_uses) and renews the expiry.
  // `port` (when not 0) is the only port the grant opens: a redirect to https://h/ is no
  // way to h:8443; `protocol` is what may be spoken there (a redirect to http://h/ is no
  // way to a TLS tunnel to h:80). The latest grant's port and protocol stand.
  void grant(std::string_view session, const domain_name& to_host, const domain_name& from_host, std::string_view rule,
             clock::time_point now, clock::duration ttl = default_ttl, std::uint16_t port = 0,
             port_protocol protocol = port_protocol::any);
  // The live grant for (session, host), left in place (DNS: resolving is not the use).
  std::optional<origin> peek(std::string_view session, const domain_name& host, clock::time_point now);
  // The live grant for (session, host), removed (the proxy: the connection is the use).
  // A connection on another port than the grant's, or whose first bytes spoke what the
  // grant's protocol does not admit, neither gets nor uses it (`unjudged`: not yet known,
  // a CONNECT whose tunnel is judged next against origin::protocol).
  std::optional<origin> take(std::string_view session, const domain_name& host, clock::time_point now,
                             std::uint16_t port = 0, wire spoken = wire::unjudged);

  // Remembers for refusal_ttl that `from_host` redirected `session` to `host` and no
  // `redirects:` entry allowed it.
  void refused(std::string_view session, const domain_name& host, const domain_name& from_host, clock::time_point now);
  // The host that redirected `session` to `host` and was refused, if still remembered.
  std::optional<std::string> refused_from(std::string_view session, const domain_name& host, clock::time_point now);

  // Drops everything of a session (it closed).
  void forget(std::string_view session);

  // Live and expired-but-not-swept entries, grants and refusals (for tests and stats).
  std::size_t size() const;

 private:
  // One bounded (session, host) -> origin map with expiry, oldest first.
  class table {
   public:
    explicit table(limits l) : limits_(l) {}
    void put(std::string_view session, std::string_view host, origin o, clock::time_point expires,
             clock::time_point now);
    origin* find(std::string_view session, std::string_view host, clock::time_point now);
    std::optional<origin> remove(std::string_view session, std::string_view host, clock::time_point now);
    void forget(std::string_view session);
    std::size_t size() const noexcept { return order_.size(); }

   private:
    struct entry {
      std::string key;  // session '\0' host
      std::string session;
      origin what;
      clock::time_point expires;
    };
    using iterator = std::list<entry>::iterator;
    void erase(iterator it);
    void sweep(clock::time_point now);

    limits limits_;
    std::list<entry> order_;  // oldest first
    std::unordered_map<std::string, iterator> by_key_;
    std::unordered_map<std::string, std::size_t> per_session_;
  };

  // The mutex, and on release the count `held_` as the tables leave it.
  struct locked {
    explicit locked(const redirect_grants& g) : grants(g), lock(g.mutex_) {}
    ~locked() { grants.held_.store(grants.grants_.size() + grants.refusals_.size(), std::memory_order_release); }
    const redirect_grants& grants;
    std::lock_guard<std::mutex> lock;
  };
  bool empty() const noexcept { return held_.load(std::memory_order_acquire) == 0; }

  mutable std::mutex mutex_;
  table grants_;
  table refusals_;
  mutable std::atomic<std::size_t> held_{0};  // grants and refusals, expired ones not yet swept included
};

}  // namespace airlock::policy
