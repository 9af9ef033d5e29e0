#include "launcher/cgroup.hpp"

#include "base/cgroup_layout.hpp"
#include "base/errno_text.hpp"
#include "base/small_file.hpp"
#include "base/unique_fd.hpp"
#include "policy/units.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <sstream>
#include <thread>

namespace airlock::launcher {
namespace fs = std::filesystem;
namespace {

using base::fail;

// A file that cannot be read (a cgroup removed meanwhile) reads as empty.
std::string read_text(const fs::path& p) {
  auto text = base::read_file(p);
  return text ? std::move(*text) : std::string();
}

base::result<void> write_text(const fs::path& p, const std::string& value) {
  base::unique_fd fd(::open(p.c_str(), O_WRONLY | O_CLOEXEC));
  if (!fd || ::write(fd.get(), value.data(), value.size()) < 0)
    return fail<void>("write '" + value + "' to " + p.string() + ": " + base::errno_text());
  return {};
}

bool has_word(const std::string& text, std::string_view word) {
  std::istringstream in(text);
  std::string w;
  while (in >> w)
    if (w == word) return true;
  return false;
}

}  // namespace

std::vector<fs::path> cgroup_plan::dirs() const {
  std::vector<fs::path> out;
  for (const auto* p : {&v2, &memory, &pids, &cpu})
    if (!p->empty() && std::find(out.begin(), out.end(), *p) == out.end()) out.push_back(*p);
  return out;
}

cgroup_host this_host() {
  cgroup_host h;
  h.mountinfo = read_text("/proc/self/mountinfo");
  h.own_cgroups = read_text("/proc/self/cgroup");
  h.read = [](const fs::path& p) { return read_text(p); };
  h.writable = [](const fs::path& p) { return ::access(p.c_str(), W_OK) == 0; };
  return h;
}

base::result<cgroup_plan> plan_cgroups(const std::string& id, const cgroup_limits& limits, const cgroup_host& host) {
  const auto l = base::read_cgroup_layout(host.mountinfo, host.own_cgroups, host.read);
  cgroup_plan plan;
  if (!l.v2_mount.empty() && host.writable(l.v2_mount)) plan.v2 = l.v2_mount / "airlock" / id;

  auto place = [&](bool wanted, std::string_view controller, const std::optional<base::cgroup_layout::v1>& v1,
                   fs::path& out) -> base::result<void> {
    if (!wanted) return {};
    if (!plan.v2.empty() && has_word(l.v2_controllers, controller)) {
      out = plan.v2;
      return {};
    }
    if (v1 && host.writable(v1->own)) {
      out = v1->own / ("airlock-" + id);
      return {};
    }
    // `ip netns exec` remounts /sys for its namespace, which hides /sys/fs/cgroup.
    const bool none = l.v2_mount.empty() && !l.memory && !l.pids && !l.cpu;
    std::string why;
    if (none)
      why = "no cgroup hierarchy is mounted here (under 'ip netns exec', which remounts /sys, "
            "use 'nsenter --net=/run/netns/NAME airlock run ...' instead)";
    else if (l.v2_mount.empty()) why = "no cgroup v2 hierarchy is mounted";
    else if (plan.v2.empty()) why = "cgroup v2 at " + l.v2_mount.string() + " is not writable";
    else why = "cgroup v2 at " + l.v2_mount.string() + " has no " + std::string(controller) + " controller";
    if (!v1 && !none) why += ", and no cgroup v1 hierarchy has it either";
    return fail<void>("cannot install the " + std::string(controller) + " limit: " + why +
                      "; run as root on a host with cgroup v2 (or v1 " + std::string(controller) +
                      ") mounted read-write, or drop --memory/--pids/--cpus");
  };
  if (auto r = place(limits.memory_bytes.has_value(), "memory", l.memory, plan.memory); !r)
    return fail<cgroup_plan>(r.error());
  if (auto r = place(limits.pids.has_value(), "pids", l.pids, plan.pids); !r) return fail<cgroup_plan>(r.error());
  if (auto r = place(limits.cpus.has_value(), "cpu", l.cpu, plan.cpu); !r) return fail<cgroup_plan>(r.error());
  return plan;
}

base::result<sandbox_cgroup> sandbox_cgroup::create(const cgroup_plan& plan, const cgroup_limits& limits) {
  sandbox_cgroup cg;
  cg.plan_ = plan;
  cg.limits_ = limits;
  if (!plan.v2.empty()) {
    // The parent /sys/fs/cgroup/airlock is shared by all sandboxes and stays; controllers
    // must be enabled on the root and on it before a child can use them.
    const auto parent = plan.v2.parent_path();
    if (::mkdir(parent.c_str(), 0755) != 0 && errno != EEXIST)
      return fail<sandbox_cgroup>("cannot create cgroup " + parent.string() + ": " + base::errno_text() +
                                  "; run as root with cgroup v2 mounted read-write, or drop --memory/--pids/--cpus");
    std::string enable;
    for (auto [dir, name] : {std::pair{&plan.memory, "memory"}, {&plan.pids, "pids"}, {&plan.cpu, "cpu"}})
      if (*dir == plan.v2) enable += std::string(enable.empty() ? "+" : " +") + name;
    if (!enable.empty()) {
      for (const auto& at : {parent.parent_path(), parent})
        if (auto r = write_text(at / "cgroup.subtree_control", enable); !r)
          return fail<sandbox_cgroup>("cannot enable the " + enable + " controllers: " + r.error());
    }
  }
  for (const auto& dir : plan.dirs()) {
    if (::mkdir(dir.c_str(), 0755) != 0)
      return fail<sandbox_cgroup>("cannot create cgroup " + dir.string() + ": " + base::errno_text() +
                                  "; run as root with cgroups mounted read-write, or drop --memory/--pids/--cpus");
    cg.created_.push_back(dir);
  }
  auto set = [](const fs::path& file, const std::string& value) { return write_text(file, value); };
  if (limits.memory_bytes) {
    const auto bytes = std::to_string(*limits.memory_bytes);
    if (plan.memory == plan.v2) {
      if (auto r = set(plan.memory / "memory.max", bytes); !r)
        return fail<sandbox_cgroup>("memory limit: " + r.error());
      if (fs::exists(plan.memory / "memory.swap.max"))
        if (auto r = set(plan.memory / "memory.swap.max", "0"); !r)
          return fail<sandbox_cgroup>("memory limit: " + r.error());
    } else {
      if (auto r = set(plan.memory / "memory.limit_in_bytes", bytes); !r)
        return fail<sandbox_cgroup>("memory limit: " + r.error());
      if (fs::exists(plan.memory / "memory.memsw.limit_in_bytes"))
        if (auto r = set(plan.memory / "memory.memsw.limit_in_bytes", bytes); !r)
          return fail<sandbox_cgroup>("memory limit: " + r.error());
    }
  }
  if (limits.pids)
    if (auto r = set(plan.pids / "pids.max", std::to_string(*limits.pids)); !r)
      return fail<sandbox_cgroup>("pids limit: " + r.error());
  if (limits.cpus) {
    constexpr long period = 100000;
    const auto quota = std::max(1000L, std::lround(*limits.cpus * period));
    if (plan.cpu == plan.v2) {
      if (auto r = set(plan.cpu / "cpu.max", std::to_string(quota) + " " + std::to_string(period)); !r)
        return fail<sandbox_cgroup>("cpu limit: " + r.error());
    } else {
      if (auto r = set(plan.cpu / "cpu.cfs_period_us", std::to_string(period)); !r)
        return fail<sandbox_cgroup>("cpu limit: " + r.error());
      if (auto r = set(plan.cpu / "cpu.cfs_quota_us", std::to_string(quota)); !r)
        return fail<sandbox_cgroup>("cpu limit: " + r.error());
    }
  }
  return cg;
}

sandbox_cgroup::~sandbox_cgroup() {
  if (!created_.empty()) (void)remove();
}

std::vector<std::string> sandbox_cgroup::procs_files() const {
  std::vector<std::string> out;
  for (const auto& d : created_) out.push_back((d / "cgroup.procs").string());
  return out;
}

void sandbox_cgroup::kill() const {
  for (const auto& d : created_) {
    if (fs::exists(d / "cgroup.kill")) {
      (void)write_text(d / "cgroup.kill", "1");
      continue;
    }
    std::istringstream in(read_text(d / "cgroup.procs"));
    pid_t pid = 0;
    while (in >> pid)
      if (pid > 0) ::kill(pid, SIGKILL);
  }
}

base::result<void> sandbox_cgroup::remove() {
  std::string errors;
  // Children first: created_ holds v2 and v1 directories, none inside another.
  for (const auto& d : created_)
    if (auto r = remove_cgroup_dir(d); !r) errors += (errors.empty() ? "" : "; ") + r.error();
  created_.clear();
  if (!errors.empty()) return errors;
  return {};
}

std::optional<std::string> sandbox_cgroup::limit_hit() const {
  auto counter = [&](const fs::path& file, std::string_view key) -> std::uint64_t {
    std::istringstream in(read_text(file));
    std::string k;
    std::uint64_t v = 0;
    while (in >> k >> v)
      if (k == key) return v;
    return 0;
  };
  if (limits_.memory_bytes) {
    const auto file = plan_.memory == plan_.v2 ? plan_.memory / "memory.events" : plan_.memory / "memory.oom_control";
    if (counter(file, "oom_kill") > 0) return "memory limit (" + policy::format_size(*limits_.memory_bytes) + ")";
  }
  if (limits_.pids && counter(plan_.pids / "pids.events", "max") > 0)
    return "pids limit (" + std::to_string(*limits_.pids) + ")";
  return std::nullopt;
}

base::result<bool> remove_cgroup_dir(const fs::path& dir) {
  if (!fs::exists(dir)) return false;
  // Bounded: 400 x 5 ms. A process in the middle of exiting keeps the directory busy
  // for a moment after it was killed.
  for (int attempt = 0; attempt < 400; ++attempt) {
    if (::rmdir(dir.c_str()) == 0 || errno == ENOENT) return true;
    if (errno != EBUSY) return fail<bool>("remove cgroup " + dir.string() + ": " + base::errno_text());
    if (attempt % 20 == 0) {
      if (fs::exists(dir / "cgroup.kill")) {
        (void)write_text(dir / "cgroup.kill", "1");
      } else {
        std::istringstream in(read_text(dir / "cgroup.procs"));
        pid_t pid = 0;
        while (in >> pid)
          if (pid > 0) ::kill(pid, SIGKILL);
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return fail<bool>("remove cgroup " + dir.string() + ": still busy after 2 s");
}

}  // namespace airlock::launcher
