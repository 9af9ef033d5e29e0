#include "daemon/session_registry.hpp"

#include "base/read_sections.hpp"
#include "base/small_file.hpp"
#include "daemon/metrics.hpp"
#include "daemon/session_state.hpp"

#include "policy/host_port.hpp"
#include "policy/snapshot.hpp"

#include <algorithm>
#include <atomic>
#include <random>
#include <thread>

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

std::string derived_policy_name(const std::string& id) { return std::string(metrics::runtime_policy_prefix) + id; }

// "HOST[:PORT]" allowances as rules: a name or "*.suffix" on the given port (or the
// default 80 and 443), an address as a /32 or /128 cidr rule.
registry_result<std::vector<policy::rule_config>> allowances(const std::vector<std::string>& texts,
                                                             const std::string& id) {
  std::vector<policy::rule_config> rules;
  registry_error errors{400, {}};
  for (std::size_t i = 0; i < texts.size(); ++i) {
    const auto hp = policy::parse_host_port(texts[i]);
    if (!hp) {
      errors.messages.push_back("allow[" + std::to_string(i) + "]: '" + texts[i] +
                                "' is not HOST[:PORT] (port 1..65535; IPv6 as [ADDR]:PORT)");
      continue;
    }
    policy::rule_config rule;
    boost::system::error_code ec;
    const auto address = boost::asio::ip::make_address(hp->host, ec);
    if (!ec) {
      rule.type = policy::rule_config::kind::cidr;
      rule.network = policy::cidr{address, static_cast<std::uint8_t>(address.is_v4() ? 32 : 128)};
      rule.pattern = hp->host;
    } else if (auto pattern = policy::parse_host_pattern(hp->host); pattern.has_value()) {
      rule = std::move(*pattern);
    } else {
      errors.messages.push_back("allow[" + std::to_string(i) + "]: " + pattern.error());
      continue;
    }
    rule.ports = hp->port ? std::vector<std::uint16_t>{*hp->port} : std::vector<std::uint16_t>{80, 443};
    // What decisions name as their rule: where the allowance came from.
    rule.mark = policy::source_mark{"session " + id + " allow", static_cast<int>(i + 1), 1};
    rules.push_back(std::move(rule));
  }
  if (!errors.messages.empty()) return errors;
  return rules;
}

bool overlaps(const policy::cidr& a, const policy::cidr& b) { return a.contains(b.network) || b.contains(a.network); }

std::vector<std::string> error_texts(const std::vector<policy::config_error>& errors) {
  std::vector<std::string> out;
  for (const auto& e : errors) out.push_back(e.to_string());
  return out;
}

}  // namespace

void session_tally::add(const record::decision_record& r) noexcept {
  constexpr auto relaxed = std::memory_order_relaxed;  // totals only: nothing else is ordered by them
  if (r.event == record::event_kind::dns) dns_queries.fetch_add(1, relaxed);
  // A connection counts once, by its decision; its bytes come with its close line.
  if (r.event == record::event_kind::connect)
    (r.verdict == policy::verdict::allow ? connections_allowed : connections_denied).fetch_add(1, relaxed);
  if (r.event != record::event_kind::connect && r.event != record::event_kind::close) return;
  if (r.bytes_up.value_or(0) != 0) bytes_up.fetch_add(*r.bytes_up, relaxed);
  if (r.bytes_down.value_or(0) != 0) bytes_down.fetch_add(*r.bytes_down, relaxed);
}

control::session_totals session_tally::read() const noexcept {
  constexpr auto relaxed = std::memory_order_relaxed;
  return {dns_queries.load(relaxed), connections_allowed.load(relaxed), connections_denied.load(relaxed),
          bytes_up.load(relaxed), bytes_down.load(relaxed)};
}

session_registry::session_registry(policy::store& policies, record::decision_sink& log, metrics& m)
    : policies_(policies), log_(log), metrics_(m) {}

session_registry::~session_registry() {
  {
    std::lock_guard lock(mutex_);
    for (const auto& [id, e] : sessions_) emit_session(e, "close");
  }
  delete index_.load(std::memory_order_relaxed);  // the loops are gone: nobody reads it
}

registry_result<std::shared_ptr<const policy::snapshot>> session_registry::compile_and_publish(
    const policy::config& base) {
  policy::config composed = base;
  for (const auto& [id, e] : sessions_) {
    if (e.extra_allow.empty()) continue;
    auto it = std::find_if(base.policies.begin(), base.policies.end(),
                           [&](const auto& p) { return p.name == e.base_policy; });
    // A session whose policy is gone keeps a name the snapshot lacks: it fails closed.
    if (it == base.policies.end()) continue;
    policy::policy_config derived = *it;
    derived.name = derived_policy_name(id);
    derived.allow.insert(derived.allow.end(), e.extra_allow.begin(), e.extra_allow.end());
    composed.policies.push_back(std::move(derived));
  }
  auto next = policy::snapshot::compile(composed);
  if (!next.has_value()) return registry_error{422, error_texts(next.error())};
  policies_.publish(*next);
  return *next;
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

session_registry::restore_report session_registry::restore_from(const std::filesystem::path& file) {
  restore_report report;
  std::error_code missing;
  if (std::filesystem::exists(file, missing)) {
    auto text = base::read_file(file, 1 << 20);
    if (!text) {
      report.messages.push_back(text.error());
    } else if (auto sessions = sessions_from_json(*text); !sessions.has_value()) {
      // Kept for a person to read: the next write would replace the only record of those
      // sandboxes' bindings.
      const auto kept = std::filesystem::path(file.string() + ".unreadable");
      std::error_code ec;
      std::filesystem::rename(file, kept, ec);
      report.messages.push_back(file.string() + ": " + sessions.error() + "; no session restored (kept as " +
                                kept.string() +
                                "); sandboxes registered before the restart fall to the config's "
                                "bindings until registered again");
    } else {
      for (const auto& s : *sessions) {
        if (auto added = add(s.request); added.has_value()) {
          ++report.restored;
          if (!s.tool_call.empty()) (void)set_context(s.request.id, s.tool_call, {});
          continue;
        } else {
          std::string why = added.error().messages.empty() ? "refused" : added.error().messages.front();
          report.messages.push_back("session '" + s.request.id + "' held, its traffic denied: " + why);
          hold(s.request, why);
          ++report.held;
        }
      }
    }
  }
  std::lock_guard lock(mutex_);
  state_file_ = file;
  save_state();
  return report;
}

void session_registry::hold(const control::session_request& request, const std::string& why) {
  std::lock_guard lock(mutex_);
  if (sessions_.contains(request.id)) return;  // an id the config took: its own binding stands
  entry e;
  e.view.id = request.id;
  e.view.runtime = true;
  // No snapshot has a policy by this name (it is no valid policy name), so session_for
  // answers none for these sources: denied session_unknown, never a broader binding.
  e.view.policy = "(held: " + (request.policy.empty() ? std::string("default") : request.policy) + ")";
  e.view.sources = request.sources;
  e.view.labels = request.labels;
  e.view.netns = request.netns;
  e.request = request;
  auto& inserted = sessions_.emplace(request.id, std::move(e)).first->second;
  publish_runtime_table();
  publish_index();
  emit_session(inserted, "open", "restore_failed:" + why);
}

void session_registry::save_state() {
  if (state_file_.empty()) return;
  std::vector<persisted_session> all;
  for (const auto& [id, e] : sessions_)
    if (e.view.runtime) all.push_back({e.request, e.view.tool_call});
  if (auto failed = base::write_private_file(state_file_, sessions_to_json(all)); !failed.empty())
    std::fprintf(stderr, "airlock: warning: %s; a restart would not find the sessions registered since\n",
                 failed.c_str());
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

std::string session_registry::netns_of(std::string_view id) const {
  const base::read_sections::guard reading;
  const stamp_index* index = index_.load(std::memory_order_seq_cst);
  auto it = index->find(id);
  return it == index->end() ? std::string() : it->second.netns;
}

control::session_totals session_registry::close_removed(const entry& e) {
  // publish_index() took the session out and waited for every line that could still hold
  // the old index, so every line stamped as the session's is in these counters (each
  // reader's section ends with a release, which that wait acquired).
  emit_session(e, "close");
  return e.tally->read();
}

session_view session_registry::view_of(const entry& e) const {
  session_view v = e.view;
  v.totals = e.tally->read();
  return v;
}

void session_registry::publish_index() {
  auto next = std::make_unique<stamp_index>();
  for (const auto& [id, e] : sessions_)
    next->emplace(id, stamp{e.tally, e.view.labels, e.view.tool_call, e.view.netns});
  const stamp_index* old = index_.exchange(next.release(), std::memory_order_seq_cst);
  // A line being emitted on another thread this very moment may still read the old index
  // (and, through it, a removed session's counters): wait for it, then free the old one.
  base::read_sections::wait_for_readers();
  delete old;
}

void session_registry::publish_runtime_table() {
  std::vector<policy::runtime_session> table;
  for (const auto& [id, e] : sessions_) {
    if (!e.view.runtime) continue;
    policy::runtime_session s;
    s.id = id;
    s.policy = e.view.policy;
    s.labels = e.view.labels;
    for (const auto& text : e.view.sources)
      if (auto c = policy::cidr::parse(text); c.has_value()) s.sources.push_back(*c);
    table.push_back(std::move(s));
  }
  policies_.publish(std::make_shared<const policy::session_table>(std::move(table)));
}

void session_registry::emit_session(const entry& e, std::string_view action, std::string note) {
  record::decision_record r;
  r.event = record::event_kind::session;
  r.session = e.view.id;
  r.labels = e.view.labels;
  r.tool_call = e.view.tool_call;
  r.action = std::string(action);
  r.policy = e.view.policy;
  if (const auto* p = policies_.current()->find_policy(e.view.policy))
    r.mode = p->mode() == policy::policy_mode::audit ? "audit" : "enforce";
  r.sources = e.view.sources;
  if (!note.empty()) r.notes.push_back(std::move(note));
  if (action == "close") {
    const auto t = e.tally->read();
    r.dns_queries = t.dns_queries;
    r.connections_allowed = t.connections_allowed;
    r.connections_denied = t.connections_denied;
    r.bytes_up = t.bytes_up;
    r.bytes_down = t.bytes_down;
    r.duration_ms = static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - e.opened).count());
  }
  record::decision_line::write(log_, r);
}

void session_registry::emit(const record::decision_record& r) noexcept {
  try {
    metrics_.count(r);
  } catch (...) {  // a metric that cannot be counted must not cost the line
  }
  const base::read_sections::guard reading;  // until the last use of the stamp
  const stamp_index* index = index_.load(std::memory_order_seq_cst);
  const auto it = index->find(r.session);
  if (it == index->end()) return log_.emit(r);
  const stamp& s = it->second;
  s.tally->add(r);
  if (s.labels.empty() && s.tool_call.empty()) return log_.emit(r);
  try {
    record::decision_record stamped = r;
    stamped.labels = s.labels;
    stamped.tool_call = s.tool_call;
    log_.emit(stamped);
  } catch (...) {  // out of memory copying: the line without labels beats no line
    log_.emit(r);
  }
}

}  // namespace airlock::daemon
