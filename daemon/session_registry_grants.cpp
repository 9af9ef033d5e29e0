#include "daemon/session_registry.hpp"
#include "policy/families.hpp"
#include "policy/host_port.hpp"

namespace airlock::daemon {

namespace {

using grants = policy::session_grants;

registry_error refuse(int status, std::string message) { return registry_error{status, {std::move(message)}}; }

// What a grant's `allow` names, as rules: a family's hosts, or one host or "*.suffix" on
// the port given (else 80 and 443, as a session's `allow` has it).
registry_result<std::vector<policy::rule_config>> targets_of(const std::string& allow) {
  constexpr std::string_view family_prefix = "family:";
  if (std::string_view(allow).starts_with(family_prefix)) {
    auto f = policy::load_family(std::string_view(allow).substr(family_prefix.size()));
    if (!f.has_value()) {
      std::string why = f.error().empty() ? "unknown family" : f.error().front().message;
      return refuse(400, "allow: " + why);
    }
    std::vector<policy::rule_config> out;
    for (auto& r : f->allow)
      if (r.type == policy::rule_config::kind::host || r.type == policy::rule_config::kind::wildcard)
        out.push_back(std::move(r));
    return out;
  }
  const auto hp = policy::parse_host_port(allow);
  if (!hp)
    return refuse(400, "allow: '" + allow + "' is not HOST[:PORT], *.SUFFIX[:PORT] or family:NAME (port 1..65535)");
  if (policy::is_ip_literal(hp->host))
    return refuse(400, "allow: '" + allow +
                           "' is an address; a grant names hosts (an address is allowed by a cidr rule in the policy)");
  auto rule = policy::parse_host_pattern(hp->host);
  if (!rule.has_value()) return refuse(400, "allow: " + rule.error());
  rule->ports = hp->port ? std::vector<std::uint16_t>{*hp->port} : std::vector<std::uint16_t>{80, 443};
  return std::vector<policy::rule_config>{std::move(*rule)};
}

}  // namespace

registry_result<grants::view> session_registry::add_grant(const std::string& id, const grant_request& request) {
  if (!grants_) return refuse(404, "this daemon gives no grants");
  if (!request.tool_call && !request.session && !request.lasts && !request.connections)
    return refuse(400, "say how long the grant lasts: \"tool_call\": true, \"session\": true, \"for\": DURATION or "
                       "\"connections\": N");
  if (request.lasts && request.lasts->count() <= 0) return refuse(400, "for: expected a duration above zero");
  if (request.connections && *request.connections == 0) return refuse(400, "connections: expected 1 or more");
  auto targets = targets_of(request.allow);
  if (!targets.has_value()) return targets.error();

  std::lock_guard lock(mutex_);
  auto it = sessions_.find(id);
  if (it == sessions_.end()) return refuse(404, "no session '" + id + "'");
  grants::request r;
  r.session = id;
  r.allow = request.allow;
  r.targets = std::move(*targets);
  if (request.lasts) r.lasts = *request.lasts;
  r.connections = request.connections;
  r.cut = request.cut;
  r.by = request.by;
  if (request.tool_call) {
    r.tool_call = it->second.view.tool_call;
    if (r.tool_call.empty())
      return refuse(409, "session '" + id + "' has no current tool call: set one first (PUT /v1/sessions/" + id +
                             "/context {\"tool_call\": ID}), or give the grant a duration or a number of connections");
  }
  auto added = grants_->add(std::move(r), grants::clock::now());
  if (!added.has_value()) {
    if (added.error() == grants::refusal::session_full)
      return refuse(429, "session '" + id +
                             "' holds as many grants as limits.session_grants allows; revoke one (DELETE "
                             "/v1/sessions/" +
                             id + "/grants/ID) or wait for one to end");
    return refuse(429, "the daemon holds as many grants as limits.grants allows; revoke some or wait for them to end");
  }
  std::vector<std::string> notes;
  if (!added->tool_call.empty()) notes.push_back("until_tool_call_ends");
  if (request.session && added->tool_call.empty() && !request.lasts && !request.connections)
    notes.push_back("until_session_ends");
  if (request.lasts) notes.push_back("for_ms:" + std::to_string(request.lasts->count()));
  if (request.connections) notes.push_back("connections:" + std::to_string(*request.connections));
  if (!request.cut) notes.push_back("no_cut");
  if (!request.by.empty()) notes.push_back("by:" + request.by);
  if (!request.approval.empty()) notes.push_back("approval:" + request.approval);
  write_grant_line(*added, "add", std::move(notes));
  return *added;
}

registry_result<std::vector<grants::view>> session_registry::grants_of(const std::string& id) {
  std::lock_guard lock(mutex_);
  if (!sessions_.contains(id)) return refuse(404, "no session '" + id + "'");
  if (!grants_) return std::vector<grants::view>{};
  auto out = grants_->list(id, grants::clock::now());
  write_ended_grants();  // what the listing found expired
  return out;
}

registry_result<std::size_t> session_registry::revoke_grant(const std::string& id, const std::string& grant) {
  std::lock_guard lock(mutex_);
  if (!sessions_.contains(id)) return refuse(404, "no session '" + id + "'");
  if (!grants_ || !grants_->revoke(id, grant, grants::clock::now()))
    return refuse(404, "session '" + id + "' holds no grant '" + grant + "' (it may have ended: see GET /v1/sessions/" +
                           id + "/grants)");
  const std::size_t cut = write_ended_grants();
  return registry_result<std::size_t>(boost::system::in_place_value, cut);
}

void session_registry::sweep_grants() {
  if (!grants_) return;
  std::lock_guard lock(mutex_);
  grants_->sweep(grants::clock::now());
  write_ended_grants();
}

std::size_t session_registry::write_ended_grants() {
  std::size_t cut = 0;
  for (auto& e : grants_->drain_ended()) {
    cut = e.cut;
    std::vector<std::string> notes{"ended:" + std::string(policy::to_string(e.why)),
                                   "connections:" + std::to_string(e.grant.used)};
    if (e.cut != 0) notes.push_back("cut:" + std::to_string(e.cut));
    write_grant_line(e.grant, "end", std::move(notes));
  }
  return cut;
}

void session_registry::write_grant_line(const grants::view& g, std::string_view action,
                                        std::vector<std::string> notes) {
  record::decision_record r;
  r.event = record::event_kind::grant;
  r.session = g.session;
  r.action = std::string(action);
  r.name = g.allow;
  r.rule = g.rule();
  r.notes = std::move(notes);
  if (auto it = sessions_.find(g.session); it != sessions_.end()) {
    r.labels = it->second.view.labels;
    r.policy = it->second.view.policy;
    r.tool_call = it->second.view.tool_call;
  }
  // A tool call's grant is its own: its lines say so even once the session moved on.
  if (!g.tool_call.empty()) r.tool_call = g.tool_call;
  record::decision_line::write(log_, r);
}

}  // namespace airlock::daemon
