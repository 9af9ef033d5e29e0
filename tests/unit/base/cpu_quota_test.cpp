// base::cpu_quota over base::cgroup_layout: cpu.max and cpu.cfs_quota_us as the kernel
// writes them, the walk up a cgroup tree (a fake one in a temporary folder, laid out as
// /proc/self/mountinfo and /proc/self/cgroup describe it) for v2 and v1, and the loops a
// quota leaves room for.
#include "base/cgroup_layout.hpp"
#include "base/cpu_quota.hpp"
#include "base/small_file.hpp"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <string>
#include <utility>

#include <unistd.h>

namespace {

namespace fs = std::filesystem;
namespace q = airlock::base::cpu_quota;
using airlock::base::read_cgroup_layout;

std::string read_file(const fs::path& p) {
  auto text = airlock::base::read_file(p);
  return text ? std::move(*text) : std::string();
}

void write_file(const fs::path& p, const std::string& text) { std::ofstream(p) << text; }

// Writes each file of `tree` (a path under `root`, and its text), making its folders.
void plant(const fs::path& root, std::initializer_list<std::pair<const char*, const char*>> tree) {
  for (const auto& [file, text] : tree) {
    fs::create_directories((root / file).parent_path());
    write_file(root / file, text);
  }
}

// A scratch folder that goes with the test.
struct scratch {
  fs::path root = fs::temp_directory_path() / ("airlock-cpu-quota-" + std::to_string(::getpid()));
  scratch() {
    fs::remove_all(root);
    fs::create_directories(root);
  }
  ~scratch() { fs::remove_all(root); }
};

}  // namespace

TEST_CASE("cpu_quota: cpu.max and cpu.cfs_quota_us as CPUs; no limit, zero and garbage are none") {
  CHECK(q::cpus_of("150000 100000\n") == doctest::Approx(1.5));
  CHECK(q::cpus_of("50000 100000") == doctest::Approx(0.5));
  CHECK_FALSE(q::cpus_of("max 100000\n").has_value());
  CHECK_FALSE(q::cpus_of("0 100000\n").has_value());
  CHECK_FALSE(q::cpus_of("100000 0\n").has_value());
  CHECK_FALSE(q::cpus_of("100000\n").has_value());
  CHECK_FALSE(q::cpus_of("").has_value());
  CHECK(q::cpus_of_v1("200000\n", "100000\n") == doctest::Approx(2.0));
  CHECK_FALSE(q::cpus_of_v1("-1\n", "100000\n").has_value());
  CHECK_FALSE(q::cpus_of_v1("", "").has_value());
}

TEST_CASE("cpu_quota: loops are the quota rounded up, at least one") {
  CHECK(q::loops_for(0.5) == 1);
  CHECK(q::loops_for(1.0) == 1);
  CHECK(q::loops_for(1.5) == 2);
  CHECK(q::loops_for(8.0) == 8);
  CHECK(q::loops_for(0.0) == 1);
}

TEST_CASE("cpu_quota: cgroup v2, the smallest cpu.max from the process's cgroup up to the mount") {
  scratch s;
  const fs::path mount = s.root / "cgroup2";
  plant(mount, {{"cgroup.controllers", "cpu memory pids\n"},
                {"outer/cpu.max", "300000 100000\n"},
                {"outer/inner/cpu.max", "max 100000\n"},
                {"outer/inner/leaf/cpu.max", "max 100000\n"}});
  const std::string mountinfo = "30 22 0:27 / " + mount.string() + " rw,relatime - cgroup2 cgroup2 rw\n";
  auto limit_for = [&](const std::string& own) {
    return q::limit(read_cgroup_layout(mountinfo, "0::" + own + "\n", read_file), read_file);
  };
  SUBCASE("a parent's limit holds for its children") { CHECK(limit_for("/outer/inner/leaf") == doctest::Approx(3.0)); }
  SUBCASE("a child's smaller limit wins") {
    write_file(mount / "outer/inner/cpu.max", "120000 100000\n");
    CHECK(limit_for("/outer/inner/leaf") == doctest::Approx(1.2));
  }
  SUBCASE("a container's own cgroup namespace: its limit is at the mount") {
    write_file(mount / "cpu.max", "100000 100000\n");
    CHECK(limit_for("/") == doctest::Approx(1.0));
  }
  SUBCASE("no limit on the way") { CHECK_FALSE(limit_for("/elsewhere").has_value()); }
  SUBCASE("a path outside the namespace's root is not followed") { CHECK_FALSE(limit_for("/../outer").has_value()); }
}

TEST_CASE("cpu_quota: cgroup v1, the cpu controller's quota over its period, up to its mount") {
  scratch s;
  const fs::path mount = s.root / "cpu";
  plant(mount, {{"sandboxes/cpu.cfs_quota_us", "150000\n"},
                {"sandboxes/cpu.cfs_period_us", "100000\n"},
                {"sandboxes/one/cpu.cfs_quota_us", "-1\n"},
                {"sandboxes/one/cpu.cfs_period_us", "100000\n"}});
  const std::string mountinfo = "31 30 0:28 / " + mount.string() + " rw,relatime - cgroup cgroup rw,cpu,cpuacct\n";
  const auto l = read_cgroup_layout(mountinfo, "3:cpu,cpuacct:/sandboxes/one\n0::/\n", read_file);
  REQUIRE(l.cpu.has_value());
  CHECK(l.cpu->own == mount / "sandboxes/one");
  CHECK(q::limit(l, read_file) == doctest::Approx(1.5));
}

TEST_CASE("cgroup_layout: this process's v2 cgroup is read from its 0:: line only") {
  const auto none = [](const fs::path&) { return std::string(); };
  CHECK(read_cgroup_layout("", "0::/system.slice/airlock.service\n", none).v2_own == "/system.slice/airlock.service");
  CHECK(read_cgroup_layout("", "12:cpu,cpuacct:/docker/abc\n", none).v2_own.empty());
  CHECK(read_cgroup_layout("", "0::relative\n", none).v2_own.empty());
}
