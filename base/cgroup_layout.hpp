#pragma once
// The host's cgroup mounts and this process's place in each, from /proc/self/mountinfo and
// /proc/self/cgroup: where the launcher puts a sandbox's limits (launcher/cgroup.hpp), and
// what CPU quota the daemon's `threads: auto` keeps within (base/cpu_quota.hpp).
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace airlock::base {

struct cgroup_layout {
  std::filesystem::path v2_mount;  // empty: no cgroup v2 hierarchy mounted
  std::string v2_controllers;      // cgroup.controllers of the v2 root
  std::string v2_own;              // this process's v2 cgroup ("/a/b"); empty: none
  struct v1 {
    std::filesystem::path mount;
    std::filesystem::path own;  // this process's cgroup in it, as a directory
  };
  std::optional<v1> memory, pids, cpu;
};

// `read` gives a file's text (the v2 root's cgroup.controllers), empty when it cannot.
cgroup_layout read_cgroup_layout(std::string_view mountinfo, std::string_view own_cgroups,
                                 const std::function<std::string(const std::filesystem::path&)>& read);

}  // namespace airlock::base
