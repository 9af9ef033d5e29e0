// Descriptors: the soft limit raised to the hard one, what a limit holds, and the spare
// descriptor an accept loop lends when the process has no other. The last runs in a child
// process under a small limit of its own, so the test binary keeps its descriptors.
#include "base/open_files.hpp"

#include <doctest/doctest.h>

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

namespace {

using airlock::base::connections_within;
using airlock::base::raise_open_files_limit;
using airlock::base::spare_descriptor;

bool can_open() {
  const int fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  ::close(fd);
  return true;
}

}  // namespace

TEST_CASE("raise_open_files_limit: the soft limit becomes the hard one") {
  const auto now = raise_open_files_limit();
  rlimit lim{};
  REQUIRE(::getrlimit(RLIMIT_NOFILE, &lim) == 0);
  CHECK(lim.rlim_cur == lim.rlim_max);
  CHECK(now == lim.rlim_cur);
}

TEST_CASE("connections_within: two descriptors a connection, beside what the daemon keeps") {
  CHECK(connections_within(64) == 0);
  CHECK(connections_within(10) == 0);
  CHECK(connections_within(1088) == 512);
  CHECK(connections_within(20000) == 9968);
}

TEST_CASE("spare_descriptor: out of descriptors, lending the spare makes room for exactly one") {
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    // Each step that goes wrong sets its own bit in the exit status.
    int wrong = 0;
    const rlimit small{48, 48};
    if (::setrlimit(RLIMIT_NOFILE, &small) != 0) ::_exit(64);
    spare_descriptor spare;
    for (int i = 0; i < 64 && can_open(); ++i) ::open("/dev/null", O_RDONLY | O_CLOEXEC);  // use them all
    if (can_open()) wrong |= 1;
    if (!spare.lend()) wrong |= 2;
    const int taken = ::open("/dev/null", O_RDONLY | O_CLOEXEC);  // what an accept would take
    if (taken < 0) wrong |= 4;
    if (can_open()) wrong |= 8;  // only the one
    ::close(taken);
    spare.restore();
    if (can_open()) wrong |= 16;     // the spare holds it again
    if (!spare.lend()) wrong |= 32;  // and can lend it again
    ::_exit(wrong);
  }
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
}
