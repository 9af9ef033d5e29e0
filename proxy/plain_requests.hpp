#pragma once
// A plain-HTTP connection relayed as bytes, each request judged on its way up: the relay's
// gate (proxy/request_gate.hpp) hands every head to the same judgement a served
// connection's requests get (judge_request), and a refused one gets its own `http` line
// and, once the upstream has answered what went before, the refusal; then the connection
// ends. Only the request direction is read, so this costs a parse per head, not a served
// exchange: where the answers matter (a rule that follows redirects from the host, or
// logs each request) or a request may switch protocols (a port that carries `any`), the
// connection is served instead (serve_plain_http).
#include "policy/domain_name.hpp"
#include "policy/snapshot.hpp"
#include "proxy/connection.hpp"
#include "proxy/request_gate.hpp"
#include "proxy/served_connection.hpp"
#include "proxy/steps.hpp"

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <cstdint>
#include <memory>
#include <span>
#include <string>

namespace airlock::proxy {

class plain_requests final : private request_gate::judge {
 public:
  // `connection`: the allowed connection's record, whose shared fields each request's
  // line repeats; `policy` keeps the judging policy alive for the connection's life.
  plain_requests(proxy_context& ctx, std::shared_ptr<const policy::compiled_policy> policy, const served_target& t,
                 std::string_view granted_rule, const record::decision_record& connection);

  request_gate& gate() noexcept { return gate_; }
  // The upstream it reached, for the lines of later requests.
  void connected(const record::decision_record& connection);
  // After a refusal: the client hears it, and the connection ends.
  boost::asio::awaitable<void> answer(boost::asio::ip::tcp::socket& client);

 private:
  unsigned request(const http_head::request& r, std::uint64_t number) override;
  unsigned refuse(request_gate::unframed why, const http_head::request* head, std::uint64_t number) override;
  record::decision_record line_for() const;
  unsigned refused(record::decision_record rec, unsigned status);

  proxy_context& ctx_;
  std::shared_ptr<const policy::compiled_policy> policy_;
  policy::domain_name name_;
  std::uint16_t port_;
  std::optional<policy::reason> granted_;
  std::string granted_rule_;
  const base::cut_switch* cut_;  // the grant's, when one let the connection through
  std::string connection_;       // the connection's record, packed (record/packed.hpp): its shared fields
  std::string plain_host_;       // judge_request's: the first request's host and port
  std::unique_ptr<record::decision_record> refusal_;  // the refused request's line, once there is one
  request_gate gate_{*this};
};

// Serves: the connection's answers matter, or a request may switch protocols.
bool served_not_relayed(const served_target& t) noexcept;

// An allowed plain-HTTP connection that is relayed: its first bytes go through a new gate
// in `plan` (its first request refused: answered here, false), then airlock connects and
// sends what the gate let through. True when the relay may start (the line handed to
// `line`; a later request among the first bytes may be refused already, and the relay
// then only brings the answers before it); false when the connection was refused or its
// upstream not reached (answered here).
boost::asio::awaitable<bool> start_judged_relay(boost::asio::ip::tcp::socket& client, std::span<const std::byte> first,
                                                const served_target& t,
                                                std::shared_ptr<const policy::compiled_policy> policy,
                                                boost::asio::ip::tcp::socket& upstream, proxy_context& ctx,
                                                record::decision_line& guard, record::decision_line& line,
                                                steps::relay_plan& plan);

}  // namespace airlock::proxy
