#include "base/small_file.hpp"
#include "daemon/session_registry.hpp"
#include "daemon/session_state.hpp"

#include <cstdio>
#include <filesystem>

namespace airlock::daemon {

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

}  // namespace airlock::daemon
