#pragma once
// One DNS query, top to bottom: parse, find the session, decide, resolve upstream,
// filter the answer, reply under the client's own id, log exactly one decision.
#include "attribution/finder.hpp"
#include "attribution/probe.hpp"
#include "base/overload.hpp"
#include "base/token_bucket.hpp"
#include "dns/answer_cache.hpp"
#include "dns/answer_filter.hpp"
#include "dns/lookup.hpp"
#include "dns/name_table.hpp"
#include "dns/resolver.hpp"
#include "policy/redirect_grants.hpp"
#include "policy/session_grants.hpp"
#include "policy/store.hpp"
#include "record/approval_desk.hpp"
#include "record/decision_line.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/address.hpp>

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>

namespace airlock::dns {

struct query_context {
  policy::store& policies;
  resolver& upstream;
  record::decision_sink& log;
  name_table& names;
  answer_cache& cache;
  policy::dns_config settings{};       // from the config's `dns:` (rate, refused types, deny rcode)
  bool refuse_when_unrecorded = true;  // `log.when_unwritable: refuse` (policy::config)
  filter_settings filter{};
  // One bucket per session id: bounded by the number of sessions, not by clients.
  std::unordered_map<std::string, base::token_bucket> buckets{};
  // Process attribution for sessions started by airlock (optional, as in the proxy).
  attribution::finder* finder = nullptr;
  std::function<std::string(std::string_view)> netns_of{};
  // One-shot allowances from redirects the proxy followed, and the sessions' grants
  // (shared with it); optional.
  policy::redirect_grants* grants = nullptr;
  policy::session_grants* session_grants = nullptr;
  // Denials held for an approver (policies with `approval:`); optional.
  record::approval_desk* approvals = nullptr;
  // Memory pressure (base/overload.hpp): refusing, no query is taken on. Optional.
  const base::overload_state* overload = nullptr;
};

// The reply to send, or nullopt to stay silent (input too broken to answer).
// Over UDP the reply fits the client's EDNS size (512 without EDNS); over TCP 65535.
boost::asio::awaitable<std::optional<std::string>> answer_query(query_context& ctx, std::span<const std::byte> packet,
                                                                const boost::asio::ip::address& client_address,
                                                                std::uint16_t client_port, bool over_udp);

// The same query in two parts, for a caller that answers without a coroutine when nothing
// has to be waited for (a cache hit, a denial, an error): begin() judges it and, unless
// it must wait, has the reply; finish() is the rest (the upstream, a denial's process
// lookup). The decision line leaves exactly once, when the started_query that holds it is
// destroyed (so after the reply was built, and for a finished query after finish()).
class started_query {
 public:
  started_query(query_context& ctx, const boost::asio::ip::address& client_address, std::uint16_t client_port,
                bool over_udp);
  started_query(started_query&& other) noexcept;
  started_query& operator=(started_query&&) = delete;
  ~started_query();

  // Judges `packet`; true when the reply is known (take it with reply()).
  bool begin(std::span<const std::byte> packet, const boost::asio::any_io_executor& ex);
  std::optional<std::string>& reply() noexcept { return reply_; }
  // For a query begin() did not complete: resolves, filters, waits for what must be waited for.
  boost::asio::awaitable<std::optional<std::string>> finish();

  const record::decision_record& record() const noexcept { return *rec_; }

 private:
  struct judged;
  std::optional<std::string> build_answer(judged& j, boost::system::result<resolved, resolve_error> r);
  boost::asio::awaitable<bool> ask_approver(judged& j);
  bool must_wait_for_process() const noexcept;

  query_context* ctx_;
  boost::asio::ip::address client_address_;
  std::uint16_t client_port_;
  bool over_udp_;
  // From a per-thread pool of spare records (their strings keep their memory), back to it
  // once the line is emitted.
  struct back_to_pool {
    void operator()(record::decision_record* r) const noexcept;
  };
  std::unique_ptr<record::decision_record, back_to_pool> rec_;
  // The query's line, owed from the start; declared after rec_, so it leaves before the
  // record goes back to the pool. Its probe names the asking process.
  record::decision_line line_;
  std::optional<std::string> reply_;
  std::unique_ptr<judged> judged_;  // what finish() needs: only for a query that waits
  std::string granted_rule_;        // the rule text of a grant an approver's answer made
};

}  // namespace airlock::dns
