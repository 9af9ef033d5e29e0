#include "launcher/gc.hpp"

#include "launcher/cgroup.hpp"
#include "launcher/netlink.hpp"
#include "launcher/netns.hpp"
#include "launcher/nft_apply.hpp"

#include <algorithm>

namespace airlock::launcher {
namespace fs = std::filesystem;
namespace {

// Finds a namespace with identity `id` among the pins under /run/netns.
base::unique_fd find_netns(const std::string& id) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(netns_dir, ec)) {
    auto fd = open_netns(e.path().string());
    if (fd && netns_identity(fd->get()) == id) return std::move(*fd);
  }
  return {};
}

// A state file is root's, but a path from it is still checked before anything is
// deleted: only what airlock itself would have made.
bool ours(const sandbox_record& r, std::string& why) {
  if (!safe_resource_name(r.id) || (!r.veth.empty() && !safe_resource_name(r.veth)) ||
      (!r.nft_table.empty() && !safe_resource_name(r.nft_table))) {
    why = "names outside [A-Za-z0-9_]";
    return false;
  }
  if (r.kind == "run" && !r.netns.empty() && r.netns != netns_pin_for(r.id)) {
    why = "netns " + r.netns + " is not airlock's pin";
    return false;
  }
  for (const auto& c : r.cgroups)
    if (!c.starts_with("/sys/fs/cgroup/") ||
        (fs::path(c).filename() != r.id && fs::path(c).filename() != "airlock-" + r.id)) {
      why = "cgroup " + c + " is not airlock's";
      return false;
    }
  if (!r.copy_dir.empty() && r.copy_dir != "/var/tmp/airlock-copy-" + r.id) {
    why = "copy " + r.copy_dir + " is not airlock's";
    return false;
  }
  return true;
}

}  // namespace

bool safe_resource_name(const std::string& name) {
  return !name.empty() && name.size() <= 64 && std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  });
}

base::result<void> remove_gateway_side(const sandbox_record& r, std::vector<std::string>& removed) {
  auto work = [&]() -> base::result<void> {
    if (!r.nft_table.empty()) {
      auto t = nft_delete_table(r.nft_table);
      if (!t) return t.error();
      if (*t) removed.push_back("nft table " + r.nft_table);
    }
    if (!r.veth.empty()) {
      auto nl = rtnetlink::open();
      if (!nl) return nl.error();
      auto d = nl->delete_link(r.veth);
      if (!d) return d.error();
      if (*d) removed.push_back("veth " + r.veth);
    }
    return {};
  };
  if (r.gateway_netns.empty() || r.gateway_netns == netns_identity()) return work();
  auto fd = find_netns(r.gateway_netns);
  // A gateway namespace nobody pins any more is gone, and its table and veth with it.
  if (!fd) return {};
  return run_in_netns(fd.get(), work);
}

gc_report collect_garbage(const state_store& store, const session_remover& end_session, bool dry_run) {
  gc_report report;
  std::vector<std::string> unreadable;
  for (const auto& r : store.list(&unreadable)) {
    if (r.kind == "attach") {
      auto fd = open_netns(r.netns);
      if (fd && netns_identity(fd->get()) == r.netns_id) {
        report.kept.push_back(r.id + ": attached to " + r.netns + " (use airlock detach)");
        continue;
      }
    } else if (owner_alive(r)) {
      report.kept.push_back(r.id + ": in use by airlock run (pid " + std::to_string(r.pid) + ")");
      continue;
    }
    std::string why;
    if (!ours(r, why)) {
      report.errors.push_back(r.id + ": not touched: " + why);
      continue;
    }
    if (dry_run) {
      report.removed.push_back(r.id + " (" + (r.sandbox_ip.empty() ? "no address" : r.sandbox_ip) + ", owner gone)");
      continue;
    }
    std::vector<std::string> gone;
    std::vector<std::string> problems;
    for (const auto& c : r.cgroups) {
      auto d = remove_cgroup_dir(c);
      if (!d) problems.push_back(d.error());
      else if (*d) gone.push_back("cgroup " + c);
    }
    if (!r.session.empty() && !r.control.empty() && end_session) {
      if (auto e = end_session(r.control, r.session); e) gone.push_back("session " + r.session);
      // A daemon that is gone or restarted has no such session any more: not a failure.
    }
    if (auto g = remove_gateway_side(r, gone); !g) problems.push_back(g.error());
    if (r.kind == "run" && !r.netns.empty()) {
      auto p = remove_netns_pin(r.netns);
      if (!p) problems.push_back(p.error());
      else if (*p) gone.push_back("netns " + r.netns);
    }
    if (!r.copy_dir.empty()) {
      std::error_code ec;
      if (fs::remove_all(r.copy_dir, ec) > 0) gone.push_back("copy " + r.copy_dir);
      if (ec) problems.push_back("remove " + r.copy_dir + ": " + ec.message());
    }
    if (problems.empty()) {
      store.remove_record(r.id);
      std::string line = r.id + ":";
      for (const auto& g : gone) line += " " + g + ",";
      if (gone.empty()) line += " nothing was left but its record";
      else line.pop_back();
      report.removed.push_back(line);
    } else {
      for (const auto& p : problems) report.errors.push_back(r.id + ": " + p);
    }
  }
  for (const auto& u : unreadable) report.errors.push_back(u);
  return report;
}

}  // namespace airlock::launcher
