#include "launcher/bwrap_args.hpp"

#include <doctest/doctest.h>

#include <algorithm>

using namespace airlock::launcher;

namespace {

sandbox_spec example() {
  sandbox_spec s;
  s.system = {{"/usr", std::nullopt}, {"/bin", "usr/bin"}, {"/etc", std::nullopt}};
  s.masked = {"/etc/shadow"};
  s.home = "/home/dev";
  s.workdir = bind_entry{"/home/dev/project", "/home/dev/project", true};
  s.chdir = "/home/dev/project";
  s.binds = {{"/home/dev/.gitconfig", "/home/dev/.gitconfig", false}, {"/srv/cache", "/srv/cache", true}};
  s.files = {{5, "/etc/resolv.conf"}};
  s.status_fd = 7;
  s.command = {"curl", "--", "-not-a-bwrap-flag"};
  return s;
}

// The position of the first occurrence of `words` as consecutive arguments, or npos.
std::size_t find(const std::vector<std::string>& argv, std::initializer_list<std::string> words) {
  const std::vector<std::string> w(words);
  auto it = std::search(argv.begin(), argv.end(), w.begin(), w.end());
  return it == argv.end() ? std::string::npos : static_cast<std::size_t>(it - argv.begin());
}

}  // namespace

TEST_CASE("namespaces, capabilities and lifetime") {
  const auto a = bwrap_argv(example());
  CHECK(a.front() == "/usr/bin/bwrap");
  for (const char* flag : {"--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
                           "--die-with-parent", "--new-session"})
    CHECK(find(a, {flag}) != std::string::npos);
  CHECK(find(a, {"--cap-drop", "ALL"}) != std::string::npos);
  CHECK(find(a, {"--json-status-fd", "7"}) != std::string::npos);
  // The network namespace is airlock's own, entered before exec: bwrap must not make
  // another one, nor share or keep anything else.
  for (const char* never : {"--unshare-net", "--share-net", "--unshare-all", "--cap-add", "--unshare-user"})
    CHECK(find(a, {never}) == std::string::npos);
}

TEST_CASE("the filesystem: system read-only, fresh /dev and /proc, empty tmpfs where sockets live") {
  const auto a = bwrap_argv(example());
  CHECK(find(a, {"--ro-bind", "/usr", "/usr"}) != std::string::npos);
  CHECK(find(a, {"--symlink", "usr/bin", "/bin"}) != std::string::npos);
  CHECK(find(a, {"--ro-bind", "/etc", "/etc"}) != std::string::npos);
  CHECK(find(a, {"--dev", "/dev"}) != std::string::npos);
  CHECK(find(a, {"--proc", "/proc"}) != std::string::npos);
  for (const char* dir : {"/tmp", "/var/tmp", "/run", "/home/dev"})
    CHECK(find(a, {"--tmpfs", dir}) != std::string::npos);
  // Nothing of the host is bound whole: no / and no /home, /root, /var/run.
  CHECK(find(a, {"--ro-bind", "/", "/"}) == std::string::npos);
  CHECK(find(a, {"--bind", "/", "/"}) == std::string::npos);
  CHECK(find(a, {"--ro-bind", "/dev/null", "/etc/shadow"}) != std::string::npos);
  CHECK(find(a, {"--ro-bind-data", "5", "/etc/resolv.conf"}) != std::string::npos);
}

TEST_CASE("mount order lets later entries sit inside earlier ones") {
  const auto a = bwrap_argv(example());
  const auto etc = find(a, {"--ro-bind", "/etc", "/etc"});
  const auto home = find(a, {"--tmpfs", "/home/dev"});
  const auto cwd = find(a, {"--bind", "/home/dev/project", "/home/dev/project"});
  const auto gitconfig = find(a, {"--ro-bind", "/home/dev/.gitconfig", "/home/dev/.gitconfig"});
  const auto cache = find(a, {"--bind", "/srv/cache", "/srv/cache"});
  const auto resolv = find(a, {"--ro-bind-data", "5", "/etc/resolv.conf"});
  const auto shadow = find(a, {"--ro-bind", "/dev/null", "/etc/shadow"});
  CHECK(etc < home);
  CHECK(home < cwd);
  CHECK(cwd < gitconfig);
  CHECK(gitconfig < cache);
  CHECK(etc < resolv);
  CHECK(etc < shadow);
  CHECK(find(a, {"--chdir", "/home/dev/project"}) != std::string::npos);
}

TEST_CASE("the working directory read-only, or none") {
  auto s = example();
  s.workdir->writable = false;
  CHECK(find(bwrap_argv(s), {"--ro-bind", "/home/dev/project", "/home/dev/project"}) != std::string::npos);
  s.workdir.reset();
  s.chdir = "/home/dev";
  const auto a = bwrap_argv(s);
  CHECK(find(a, {"/home/dev/project"}) == std::string::npos);
  CHECK(find(a, {"--chdir", "/home/dev"}) != std::string::npos);
}

TEST_CASE("a disposable copy is bound where the working directory was") {
  auto s = example();
  s.workdir = bind_entry{"/var/tmp/airlock-copy-1a2b3c4d", "/home/dev/project", true};
  CHECK(find(bwrap_argv(s), {"--bind", "/var/tmp/airlock-copy-1a2b3c4d", "/home/dev/project"}) != std::string::npos);
}

TEST_CASE("CMD comes after --, untouched, even when it looks like an option") {
  const auto a = bwrap_argv(example());
  const auto dashdash = find(a, {"--", "curl"});
  REQUIRE(dashdash != std::string::npos);
  CHECK(std::vector<std::string>(a.begin() + static_cast<long>(dashdash) + 1, a.end()) ==
        std::vector<std::string>{"curl", "--", "-not-a-bwrap-flag"});
}
