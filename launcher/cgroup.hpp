#pragma once
// The sandbox's cgroups: memory, pids and cpu limits, and a way to kill and count
// everything the workload started.
//
// cgroup v2 is the design: /sys/fs/cgroup/airlock/<id> with memory.max (and
// memory.swap.max 0, so the limit is real), pids.max and cpu.max, and cgroup.kill for
// teardown. On a hybrid host (v2 mounted at /sys/fs/cgroup/unified without controllers,
// memory/pids/cpu on cgroup v1 hierarchies) each limit goes to its v1 controller in a child
// of airlock's own cgroup there (memory.limit_in_bytes, pids.max, cpu.cfs_quota_us), and the
// v2 directory still provides cgroup.kill. A limit that neither can carry fails the run
// before CMD starts.
#include "base/result.hpp"

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace airlock::launcher {

struct cgroup_limits {
  std::optional<std::uint64_t> memory_bytes;
  std::optional<std::uint64_t> pids;
  std::optional<double> cpus;
  bool any() const { return memory_bytes || pids || cpus; }
};

// Where each piece goes; computed before anything is created, so the state file can list
// every directory before it exists (airlock gc then finds even a half-made setup).
struct cgroup_plan {
  std::filesystem::path v2;                         // empty: no writable cgroup v2 hierarchy
  std::filesystem::path memory, pids, cpu;          // each: v2 (same as `v2`), a v1 directory, or empty
  std::vector<std::filesystem::path> dirs() const;  // the distinct directories, v2 first
};

// What planning looks at: the mount table, this process's cgroups, the files it reads and
// which directories it may write. this_host() reads the real ones; tests pass their own.
struct cgroup_host {
  std::string mountinfo;    // /proc/self/mountinfo
  std::string own_cgroups;  // /proc/self/cgroup
  std::function<std::string(const std::filesystem::path&)> read;
  std::function<bool(const std::filesystem::path&)> writable;
};
cgroup_host this_host();

// Plans the cgroups of sandbox `id` for `limits`, or says why a requested limit cannot be
// installed (and what to do about it).
base::result<cgroup_plan> plan_cgroups(const std::string& id, const cgroup_limits& limits,
                                       const cgroup_host& host = this_host());

class sandbox_cgroup {
 public:
  // Creates the planned directories and writes the limits. On error, what was created
  // is removed again.
  static base::result<sandbox_cgroup> create(const cgroup_plan& plan, const cgroup_limits& limits);

  sandbox_cgroup(sandbox_cgroup&&) = default;
  sandbox_cgroup& operator=(sandbox_cgroup&&) = default;
  ~sandbox_cgroup();

  // The cgroup.procs files a child writes "0" into to join (before it execs).
  std::vector<std::string> procs_files() const;
  // SIGKILL to every process inside.
  void kill() const;
  // Kills what is left, waits (bounded) until the cgroups are empty and removes them.
  base::result<void> remove();
  // "memory limit (64 MiB)" or "pids limit (20)" when the kernel enforced one.
  std::optional<std::string> limit_hit() const;

 private:
  sandbox_cgroup() = default;
  cgroup_plan plan_;
  cgroup_limits limits_;
  std::vector<std::filesystem::path> created_;
};

// Kills everything in `dir` (cgroup.kill on v2, SIGKILL per process otherwise), waits
// (bounded) until it is empty and removes it; false when it did not exist.
base::result<bool> remove_cgroup_dir(const std::filesystem::path& dir);

}  // namespace airlock::launcher
