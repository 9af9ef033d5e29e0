#pragma once
// Every session the daemon knows, configured or registered at run time, and what each
// has done. It sits between the data path and the decision log: every decision passes
// through emit(), which stamps the session's labels and current tool call (the sandbox
// never handles either, so it cannot forge them), adds to the session's totals and the
// metrics, and hands the line on. Sessions open and close with a `session` event.
//
// Runtime sessions with extra allowances get a policy of their own, derived from the
// named one; the snapshot is recompiled with it and published whole, as on a reload.
// Safe from any thread: every event loop's connections emit through it, and the control
// API changes it from the main loop. Changes take a mutex and publish what a line needs
// (each session's labels, tool call, netns and counters) as one immutable index; emit()
// reads that index and adds to atomic counters, so a decision takes no lock here. A
// session leaves the index before its close line is written, which waits for the lines
// still being emitted with an older index: the close line counts every line stamped as its.
#include "control/session_api.hpp"
#include "daemon/metrics.hpp"
#include "policy/config.hpp"
#include "policy/session_grants.hpp"
#include "policy/store.hpp"
#include "record/approval_desk.hpp"
#include "record/decision_line.hpp"

#include <atomic>
#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace airlock::daemon {

// A refusal with the HTTP status the control API answers it with.
struct registry_error {
  int status = 400;
  std::vector<std::string> messages;
};

template <typename T>
using registry_result = boost::system::result<T, registry_error>;

struct session_view {
  std::string id;
  std::string policy;
  std::vector<std::string> sources;
  record::label_list labels;
  std::string tool_call;
  std::string netns;
  bool runtime = false;
  control::session_totals totals;
};

// A session's totals, added to by every loop at once.
struct session_tally {
  std::atomic<std::uint64_t> dns_queries{0};
  std::atomic<std::uint64_t> connections_allowed{0};
  std::atomic<std::uint64_t> connections_denied{0};
  std::atomic<std::uint64_t> bytes_up{0};
  std::atomic<std::uint64_t> bytes_down{0};

  void add(const record::decision_record& r) noexcept;
  control::session_totals read() const noexcept;
};

// A grant as the control API asks for it (policy/session_grants.hpp): what, and until when.
struct grant_request {
  std::string allow;  // "HOST[:PORT]", "*.suffix[:PORT]" or "family:NAME"
  bool tool_call = false;
  bool session = false;  // lasts until the session ends (and no other scope is given)
  std::optional<std::chrono::milliseconds> lasts;
  std::optional<std::uint32_t> connections;
  bool cut = true;
  std::string by;
  std::string approval;  // the approval question whose answer this grant carries out ("a4")
};

class session_registry final : public record::decision_sink {
 public:
  // `grants`: the sessions' run-time grants, which the registry gives, ends with their tool
  // calls and sessions, and writes the lines of; null: none are given.
  // `approvals`: the desk whose questions of a session end (deny) when it does; optional.
  session_registry(policy::store& policies, record::decision_sink& log, metrics& m,
                   policy::session_grants* grants = nullptr, record::approval_desk* approvals = nullptr);
  // Closes the sessions still open, with their totals. The daemon destroys the registry
  // after its event loops, so the lines of connections cut at shutdown are counted.
  ~session_registry() override;

  // Installs the configuration (at start and on reload): recompiles with the runtime
  // sessions' derived policies, publishes, and opens/closes configured sessions that
  // appeared/disappeared. On error nothing changes.
  registry_result<std::shared_ptr<const policy::snapshot>> apply(policy::config cfg);

  registry_result<std::string> add(const control::session_request& request);
  // Keeps the runtime sessions in `file` from now on (daemon/session_state.hpp, rewritten
  // after every change), after registering the ones it holds: a daemon restarted under
  // running sandboxes judges their traffic by the sessions they registered, never by a broader configured
  // binding. A session that cannot be registered again (its policy left the config) is
  // held: its sources stay bound to a policy the snapshot lacks, so everything from them
  // is denied session_unknown. Call before the first packet is judged.
  struct restore_report {
    std::size_t restored = 0;
    std::size_t held = 0;
    std::vector<std::string> messages;  // for stderr: a file that could not be read, each held session
  };
  restore_report restore_from(const std::filesystem::path& file);
  registry_result<control::session_totals> remove(const std::string& id);
  registry_result<void> set_context(const std::string& id, const std::string& tool_call,
                                    const record::label_list& labels);
  std::vector<session_view> list() const;

  // Grants (session_registry_grants.cpp). A grant with tool_call ends when the session's
  // tool call changes (set_context); every grant ends with its session. Each gets a
  // `grant` line as it is added and as it ends.
  registry_result<policy::session_grants::view> add_grant(const std::string& id, const grant_request& request);
  registry_result<std::vector<policy::session_grants::view>> grants_of(const std::string& id);
  // The number of connections cut.
  registry_result<std::size_t> revoke_grant(const std::string& id, const std::string& grant);
  // Ends the grants that expired, with their lines (the daemon calls it every second).
  void sweep_grants();
  // `r` with its session's labels and tool call of this moment, as its line would be.
  void stamp_record(record::decision_record& r) const;
  std::optional<session_view> find(const std::string& id) const;
  // The sandbox netns of a runtime session ("" when unknown), for process attribution.
  std::string netns_of(std::string_view id) const;

  void emit(const record::decision_record& r) noexcept override;
  bool recording() const noexcept override { return log_.recording(); }

  // Told each runtime session as it is removed, with its network namespace ("" when none):
  // the process finder lets go of what it holds open there, so the namespace can die, and
  // the session's redirect grants go with it (a reused id inherits nothing).
  std::function<void(const std::string& id, const std::string& netns)> on_removed;

 private:
  struct entry {
    session_view view;  // its totals are in `tally`
    std::shared_ptr<session_tally> tally = std::make_shared<session_tally>();
    std::chrono::steady_clock::time_point opened = std::chrono::steady_clock::now();
    std::vector<policy::rule_config> extra_allow;  // runtime sessions with --allow
    std::string base_policy;                       // the policy extra_allow extends
    control::session_request request;              // runtime sessions: as registered (id set), kept on disk
  };

  registry_result<std::shared_ptr<const policy::snapshot>> compile_and_publish(const policy::config& base);
  // What a line needs of its session, read without the mutex.
  struct stamp {
    std::shared_ptr<session_tally> tally;
    record::label_list labels;
    std::string tool_call;
    std::string netns;
  };
  using stamp_index = std::map<std::string, stamp, std::less<>>;

  void publish_runtime_table();
  void publish_index();  // after every change to sessions_, under the mutex; waits for readers
  // Writes the close line of a session already out of the index; its totals.
  control::session_totals close_removed(const entry& e);
  session_view view_of(const entry& e) const;
  void emit_session(const entry& e, std::string_view action, std::string note = {});
  // Rewrites the state file (when one is kept) with the runtime sessions; under the mutex.
  void save_state();
  // A session that could not be registered again: bound, but to a policy nobody has.
  void hold(const control::session_request& request, const std::string& why);
  // The `grant` lines of the grants that ended since the last call; returns how many
  // connections the last of them (a revoke's) cut.
  std::size_t write_ended_grants();
  void write_grant_line(const policy::session_grants::view& g, std::string_view action, std::vector<std::string> notes);

  policy::store& policies_;
  record::decision_sink& log_;
  metrics& metrics_;
  policy::session_grants* grants_;
  record::approval_desk* approvals_;
  mutable std::mutex mutex_;  // guards base_ and sessions_
  policy::config base_;
  std::map<std::string, entry, std::less<>> sessions_;  // ordered: stable listings
  std::filesystem::path state_file_;                    // empty: runtime sessions live only in memory
  // Replaced whole on every change; read inside a read section (base/read_sections.hpp),
  // so a line takes no lock and writes nothing other threads write; the old one is freed
  // once the sections open at the swap have closed.
  std::atomic<const stamp_index*> index_{new stamp_index};
};

}  // namespace airlock::daemon
