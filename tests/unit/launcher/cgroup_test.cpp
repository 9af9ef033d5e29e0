#include "launcher/cgroup.hpp"

#include <doctest/doctest.h>

using namespace airlock::launcher;

namespace {

// Debian 12's default: cgroup v2 only, every controller at the root.
cgroup_host unified() {
  cgroup_host h;
  h.mountinfo =
      "22 28 0:21 / /proc rw,nosuid,nodev,noexec,relatime shared:12 - proc proc rw\n"
      "30 23 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate\n";
  h.own_cgroups = "0::/user.slice/user-1000.slice/session-2.scope\n";
  h.read = [](const std::filesystem::path& p) {
    return p == "/sys/fs/cgroup/cgroup.controllers" ? std::string("cpuset cpu io memory hugetlb pids rdma misc\n")
                                                    : std::string();
  };
  h.writable = [](const std::filesystem::path&) { return true; };
  return h;
}

// A hybrid host (this project's CI machine): v2 without controllers at /sys/fs/cgroup/unified,
// memory, pids and cpu on v1, airlock itself in a nested memory cgroup.
cgroup_host hybrid() {
  cgroup_host h;
  h.mountinfo = "25 24 0:23 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup rw\n"
                "26 24 0:24 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"
                "29 24 0:27 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
                "33 24 0:31 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids\n";
  h.own_cgroups = "8:pids:/\n4:memory:/jobs/42\n1:cpu:/\n0::/\n";
  h.read = [](const std::filesystem::path& p) {
    return p == "/sys/fs/cgroup/unified/cgroup.controllers" ? std::string("hugetlb\n") : std::string();
  };
  h.writable = [](const std::filesystem::path&) { return true; };
  return h;
}

}  // namespace

TEST_CASE("cgroup v2: one directory under /sys/fs/cgroup/airlock carries every limit") {
  auto plan = plan_cgroups("1a2b3c4d", {1 << 30, 64, 0.5}, unified());
  REQUIRE(plan.has_value());
  CHECK(plan->v2 == "/sys/fs/cgroup/airlock/1a2b3c4d");
  CHECK(plan->memory == plan->v2);
  CHECK(plan->pids == plan->v2);
  CHECK(plan->cpu == plan->v2);
  CHECK(plan->dirs() == std::vector<std::filesystem::path>{"/sys/fs/cgroup/airlock/1a2b3c4d"});
}

TEST_CASE("without limits the plan holds only the v2 directory") {
  auto plan = plan_cgroups("1a2b3c4d", {}, unified());
  REQUIRE(plan.has_value());
  CHECK(plan->memory.empty());
  CHECK(plan->dirs().size() == 1);
}

TEST_CASE("hybrid host: each limit on its v1 controller, under airlock's own cgroup there") {
  auto plan = plan_cgroups("1a2b3c4d", {1 << 30, 64, 2.0}, hybrid());
  REQUIRE(plan.has_value());
  CHECK(plan->v2 == "/sys/fs/cgroup/unified/airlock/1a2b3c4d");
  CHECK(plan->memory == "/sys/fs/cgroup/memory/jobs/42/airlock-1a2b3c4d");
  CHECK(plan->pids == "/sys/fs/cgroup/pids/airlock-1a2b3c4d");
  CHECK(plan->cpu == "/sys/fs/cgroup/cpu/airlock-1a2b3c4d");
  CHECK(plan->dirs().size() == 4);
  CHECK(plan->dirs().front() == plan->v2);
}

TEST_CASE("a limit nothing can carry is refused with what to do") {
  auto h = unified();
  h.writable = [](const std::filesystem::path&) { return false; };
  auto plan = plan_cgroups("1a2b3c4d", {1 << 30, {}, {}}, h);
  REQUIRE_FALSE(plan.has_value());
  CHECK(plan.error() ==
        "cannot install the memory limit: cgroup v2 at /sys/fs/cgroup is not writable, and no cgroup v1 hierarchy "
        "has it either; run as root on a host with cgroup v2 (or v1 memory) mounted read-write, or drop "
        "--memory/--pids/--cpus");
  // No limit asked: nothing to refuse, and no directory to make.
  auto none = plan_cgroups("1a2b3c4d", {}, h);
  REQUIRE(none.has_value());
  CHECK(none->dirs().empty());
}

TEST_CASE("no hierarchy at all (ip netns exec remounted /sys): the message says how to run instead") {
  cgroup_host h;
  h.mountinfo = "22 28 0:21 / /proc rw - proc proc rw\n";
  h.own_cgroups = "0::/\n";
  h.read = [](const std::filesystem::path&) { return std::string(); };
  h.writable = [](const std::filesystem::path&) { return true; };
  auto plan = plan_cgroups("1a2b3c4d", {{}, 64, {}}, h);
  REQUIRE_FALSE(plan.has_value());
  CHECK(plan.error().find("no cgroup hierarchy is mounted here (under 'ip netns exec', which remounts /sys, use "
                          "'nsenter --net=/run/netns/NAME airlock run ...' instead)") != std::string::npos);
}
