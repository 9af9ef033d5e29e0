#include "daemon/session_registry.hpp"

#include "daemon/session_registry_parts.hpp"
#include "policy/snapshot.hpp"

#include <algorithm>
#include <cstdio>
#include <random>

namespace airlock::daemon {

namespace asio = boost::asio;
namespace {

registry_error refuse(int status, std::string message) { return registry_error{status, {std::move(message)}}; }

bool valid_id(std::string_view id) {
  return !id.empty() && id.size() <= 64 && std::all_of(id.begin(), id.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
           c == '.' || c == ':';
  });
}

std::string new_id() {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  char buf[20];
  std::snprintf(buf, sizeof buf, "s-%08llx", static_cast<unsigned long long>(rng() & 0xffffffffULL));
  return buf;
}

bool overlaps(const policy::cidr& a, const policy::cidr& b) { return a.contains(b.network) || b.contains(a.network); }

}  // namespace

session_registry::session_registry(policy::store& policies, record::decision_sink& log, metrics& m,
                                   policy::session_grants* grants, record::approval_desk* approvals)
    : policies_(policies), log_(log), metrics_(m), grants_(grants), approvals_(approvals) {}

session_registry::~session_registry() {
  {
    std::lock_guard lock(mutex_);
    for (const auto& [id, e] : sessions_) emit_session(e, "close");
  }
  delete index_.load(std::memory_order_relaxed);  // the loops are gone: nobody reads it
}

registry_result<std::shared_ptr<const policy::snapshot>> session_registry::apply(policy::config cfg) {
  std::lock_guard lock(mutex_);
  auto snap = compile_and_publish(cfg);
  if (!snap.has_value()) return snap;
  base_ = std::move(cfg);

  // Configured sessions as the new file has them; the default policy answers for
  // sources no session covers, under the id "default" (what decisions carry).
  std::map<std::string, session_view, std::less<>> configured;
  for (const auto& s : base_.sessions) {
    auto& v = configured[s.id];
    v.id = s.id;
    v.policy = s.policy;
    v.sources.push_back(s.source.to_string());
  }
  if (base_.default_policy) {
    auto& v = configured["default"];
    v.id = "default";
    v.policy = *base_.default_policy;
    v.sources = {"0.0.0.0/0", "::/0"};
  }
  std::vector<entry> gone;
  for (auto it = sessions_.begin(); it != sessions_.end();) {
    if (it->second.view.runtime || configured.contains(it->first)) {
      ++it;
      continue;
    }
    gone.push_back(std::move(it->second));
    it = sessions_.erase(it);
  }
  std::vector<const entry*> opened;
  for (auto& [id, view] : configured) {
    if (auto it = sessions_.find(id); it != sessions_.end()) {
      if (!it->second.view.runtime) {
        it->second.view.policy = view.policy;
        it->second.view.sources = view.sources;
      }
      continue;
    }
    auto& e = sessions_[id];
    e.view = std::move(view);
    opened.push_back(&e);
  }
  publish_index();
  if (grants_) {
    for (const auto& e : gone) grants_->forget(e.view.id, policy::session_grants::clock::now());
    write_ended_grants();
  }
  if (approvals_)
    for (const auto& e : gone) approvals_->forget(e.view.id);
  for (const auto& e : gone) close_removed(e);
  for (const auto* e : opened) emit_session(*e, "open");
  return snap;
}

registry_result<std::string> session_registry::add(const control::session_request& request) {
  std::lock_guard lock(mutex_);
  const std::string id = request.id.empty() ? new_id() : request.id;
  if (!valid_id(id)) return refuse(400, "session id '" + id + "': expected 1-64 of [A-Za-z0-9._:-]");
  if (sessions_.contains(id)) return refuse(409, "session '" + id + "' exists; remove it first or pick another id");
  if (request.sources.empty()) return refuse(400, "sources: at least one address or CIDR is required");

  std::vector<policy::cidr> sources;
  for (const auto& text : request.sources) {
    auto c = policy::cidr::parse(text);
    if (!c.has_value()) return refuse(400, "sources: '" + text + "': " + c.error());
    for (const auto& [other_id, other] : sessions_) {
      if (!other.view.runtime) continue;
      for (const auto& o : other.view.sources)
        if (auto oc = policy::cidr::parse(o); oc.has_value() && overlaps(*c, *oc))
          return refuse(409, "sources: " + text + " overlaps session '" + other_id + "' (" + o + ")");
    }
    sources.push_back(*c);
  }

  std::string base = request.policy;
  if (base.empty()) {
    if (base_.default_policy) base = *base_.default_policy;
    else if (policies_.current()->find_policy("default")) base = "default";
    else return refuse(400, "policy: none given and the daemon's configuration has no default_policy");
  }
  if (!policies_.current()->find_policy(base) ||
      std::none_of(base_.policies.begin(), base_.policies.end(), [&](const auto& p) { return p.name == base; })) {
    std::string names;
    for (const auto& p : base_.policies) names += (names.empty() ? "" : ", ") + p.name;
    return refuse(404, "policy '" + base + "' is not in the daemon's configuration (it has: " + names + ")");
  }

  auto extra = allowances(request.allow, id);
  if (!extra.has_value()) return extra.error();

  entry e;
  e.view.id = id;
  e.view.runtime = true;
  e.view.policy = extra->empty() ? base : derived_policy_name(id);
  e.view.sources = request.sources;
  e.view.labels = request.labels;
  e.view.netns = request.netns;
  e.base_policy = base;
  e.extra_allow = std::move(*extra);
  e.request = request;
  e.request.id = id;
  const bool derived = !e.extra_allow.empty();
  auto& inserted = sessions_.emplace(id, std::move(e)).first->second;
  if (derived) {
    // The derived policy must be in the snapshot before the table names it.
    if (auto snap = compile_and_publish(base_); !snap.has_value()) {
      sessions_.erase(id);
      return snap.error();
    }
  }
  publish_runtime_table();
  publish_index();
  emit_session(inserted, "open");
  save_state();
  return id;
}

registry_result<control::session_totals> session_registry::remove(const std::string& id) {
  std::lock_guard lock(mutex_);
  auto it = sessions_.find(id);
  if (it == sessions_.end() || !it->second.view.runtime)
    return refuse(404, "no session '" + id + "' registered at run time");
  const bool derived = !it->second.extra_allow.empty();
  const entry gone = std::move(it->second);
  sessions_.erase(it);
  // Its grants end (their connections cut) before its close line, and what it has held
  // for an approver is denied.
  if (grants_) {
    grants_->forget(id, policy::session_grants::clock::now());
    write_ended_grants();
  }
  if (approvals_) approvals_->forget(id);
  // No new connection is its from here on, and no line counts towards it.
  publish_runtime_table();
  publish_index();
  const control::session_totals totals = close_removed(gone);
  save_state();
  if (on_removed) on_removed(id, gone.view.netns);
  // Drop the derived policy too; if that fails (it cannot: the same file compiled
  // before), the stale policy is unreachable and harmless.
  if (derived) (void)compile_and_publish(base_);
  return totals;
}

registry_result<void> session_registry::set_context(const std::string& id, const std::string& tool_call,
                                                    const record::label_list& labels) {
  std::lock_guard lock(mutex_);
  auto it = sessions_.find(id);
  if (it == sessions_.end()) return refuse(404, "no session '" + id + "'");
  it->second.view.tool_call = tool_call;
  if (grants_) {
    // The grants of the tool call that ended end with it (their lines before the next
    // call's lines are stamped with its id).
    grants_->tool_call_changed(id, tool_call, policy::session_grants::clock::now());
    write_ended_grants();
  }
  for (const auto& [k, v] : labels) {
    auto& mine = it->second.view.labels;
    auto l = std::find_if(mine.begin(), mine.end(), [&](const auto& kv) { return kv.first == k; });
    if (l == mine.end()) mine.emplace_back(k, v);
    else l->second = v;
  }
  if (it->second.view.runtime) {
    for (const auto& [k, v] : labels) {
      auto& mine = it->second.request.labels;
      auto l = std::find_if(mine.begin(), mine.end(), [&](const auto& kv) { return kv.first == k; });
      if (l == mine.end()) mine.emplace_back(k, v);
      else l->second = v;
    }
    publish_runtime_table();
  }
  publish_index();
  if (it->second.view.runtime) save_state();
  return {};
}

std::vector<session_view> session_registry::list() const {
  std::lock_guard lock(mutex_);
  std::vector<session_view> out;
  for (const auto& [id, e] : sessions_) out.push_back(view_of(e));
  return out;
}

std::optional<session_view> session_registry::find(const std::string& id) const {
  std::lock_guard lock(mutex_);
  if (auto it = sessions_.find(id); it != sessions_.end()) return view_of(it->second);
  return std::nullopt;
}

session_view session_registry::view_of(const entry& e) const {
  session_view v = e.view;
  v.totals = e.tally->read();
  return v;
}

}  // namespace airlock::daemon
