#include "launcher/child.hpp"

#include "base/errno_text.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <linux/close_range.h>
#include <poll.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cstring>

namespace airlock::launcher {
namespace {

using clock = std::chrono::steady_clock;

using base::fail;

sigset_t handled_signals() {
  sigset_t s;
  sigemptyset(&s);
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGCHLD}) sigaddset(&s, sig);
  return s;
}

// What the child reports through the pipe when a step before exec fails.
struct child_failure {
  int step;
  int error;
};
// The steps before exec, as the child reports them.
std::string step_name(int step) {
  switch (step) {
    case 1: return "join the cgroup";
    case 2: return "enter the network namespace";
    case 3: return "close inherited files";
    case 4: return "keep bwrap's files open";
    case 6: return "take the caller's groups";
    case 7: return "take the caller's group id";
    case 8: return "take the caller's user id";
    default: return "exec bwrap";
  }
}

[[noreturn]] __attribute__((no_sanitize("address"))) void child_fail(int pipe_fd, int step) {
  const child_failure f{step, errno};
  (void)!::write(pipe_fd, &f, sizeof f);
  ::_exit(125);
}

int pidfd_open(pid_t pid) { return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)); }
int pidfd_send_signal(int fd, int sig) {
  return static_cast<int>(::syscall(SYS_pidfd_send_signal, fd, sig, nullptr, 0));
}

std::optional<long> json_number(const std::string& text, std::string_view key) {
  const auto k = text.find("\"" + std::string(key) + "\"");
  if (k == std::string::npos) return std::nullopt;
  auto p = text.find(':', k);
  if (p == std::string::npos) return std::nullopt;
  ++p;
  while (p < text.size() && text[p] == ' ') ++p;
  long v = 0;
  auto [end, ec] = std::from_chars(text.data() + p, text.data() + text.size(), v);
  if (ec != std::errc{} || end == text.data() + p) return std::nullopt;
  return v;
}

std::string ns_link(pid_t pid) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/ns/pid", pid);
  char buf[64] = {};
  const auto n = ::readlink(path, buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : std::string();
}

// Every process of the sandbox's pid namespace but its init (bwrap's reaper, which ignores
// these signals anyway): what a terminal's Ctrl-C would have reached.
void signal_workload(pid_t init, int sig) {
  const auto ns = ns_link(init);
  if (ns.empty()) return;
  DIR* d = ::opendir("/proc");
  if (d == nullptr) return;
  while (const dirent* e = ::readdir(d)) {
    pid_t pid = 0;
    const auto len = std::strlen(e->d_name);
    auto [end, ec] = std::from_chars(e->d_name, e->d_name + len, pid);
    if (ec != std::errc{} || end != e->d_name + len || pid == init) continue;
    if (ns_link(pid) == ns) ::kill(pid, sig);
  }
  ::closedir(d);
}

}  // namespace

// SIGPIPE as airlock found it, for CMD (airlock itself ignores it: a reader of its stderr
// that went away must not kill it half-way through teardown).
struct sigaction original_sigpipe {};

base::result<base::unique_fd> take_signals() {
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  ::sigaction(SIGPIPE, &ignore, &original_sigpipe);
  const auto set = handled_signals();
  if (::pthread_sigmask(SIG_BLOCK, &set, nullptr) != 0)
    return fail<base::unique_fd>("block signals: " + base::errno_text());
  base::unique_fd fd(::signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK));
  if (!fd) return fail<base::unique_fd>("signalfd: " + base::errno_text());
  return fd;
}

namespace {

// What the child needs, as plain pointers: it shares the parent's memory (see below) and
// makes only system calls.
struct child_args {
  int report;
  pid_t parent;
  const char* const* procs;
  std::size_t nprocs;
  int netns_fd;
  bool run_as;  // then the three below
  uid_t uid;
  gid_t gid;
  const gid_t* groups;
  std::size_t ngroups;
  int umask;  // -1: airlock's own
  const int* inherit;
  std::size_t ninherit;
  const char* executable;
  char* const* argv;
  char* const* envp;
};

// Runs in the child, on its own stack, until execve. Not instrumented: it runs on memory
// the sanitizer does not know as a stack, in a process that is about to be replaced.
__attribute__((no_sanitize("address"))) int child_main(void* p) {
  const auto* a = static_cast<const child_args*>(p);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  ::sigaction(SIGPIPE, &original_sigpipe, nullptr);
  ::setpgid(0, 0);
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != a->parent) ::_exit(125);
  for (std::size_t i = 0; i < a->nprocs; ++i) {
    const int fd = ::open(a->procs[i], O_WRONLY | O_CLOEXEC);
    if (fd < 0 || ::write(fd, "0", 1) != 1) child_fail(a->report, 1);
    ::close(fd);
  }
  if (a->netns_fd >= 0 && ::setns(a->netns_fd, CLONE_NEWNET) != 0) child_fail(a->report, 2);
  if (a->run_as) {
    // Raw system calls: glibc's set*id would change every thread of the process, and this
    // child shares the parent's memory, so its idea of "every thread" is the parent's.
    if (::syscall(SYS_setgroups, a->ngroups, a->groups) != 0) child_fail(a->report, 6);
    if (::syscall(SYS_setresgid, a->gid, a->gid, a->gid) != 0) child_fail(a->report, 7);
    if (::syscall(SYS_setresuid, a->uid, a->uid, a->uid) != 0) child_fail(a->report, 8);
    // A change of user clears the parent-death signal; bwrap's --die-with-parent relies on
    // ours only until it sets its own, but the gap must not be open.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != a->parent) ::_exit(125);
  }
  if (a->umask >= 0) ::umask(static_cast<mode_t>(a->umask));
  // Nothing of airlock's may reach the sandbox: the embedded daemon's listening sockets
  // live in the gateway's namespace and the control connection speaks for the session.
  if (::syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_CLOEXEC) != 0) child_fail(a->report, 3);
  for (std::size_t i = 0; i < a->ninherit; ++i)
    if (::fcntl(a->inherit[i], F_SETFD, 0) != 0) child_fail(a->report, 4);
  ::execve(a->executable, a->argv, a->envp);
  child_fail(a->report, 5);
}

}  // namespace

base::result<pid_t> spawn_child(const child_spec& spec) {
  // Everything the child touches is prepared here.
  std::vector<char*> argv, envp;
  for (const auto& a : spec.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  for (const auto& e : spec.envp) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  std::vector<const char*> procs;
  for (const auto& p : spec.cgroup_procs) procs.push_back(p.c_str());

  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) return fail<pid_t>("pipe: " + base::errno_text());
  base::unique_fd report_read(pipe_fds[0]), report_write(pipe_fds[1]);
  const child_args args{report_write.get(),
                        ::getpid(),
                        procs.data(),
                        procs.size(),
                        spec.netns_fd,
                        spec.run_as.has_value(),
                        spec.run_as ? spec.run_as->uid : 0,
                        spec.run_as ? spec.run_as->gid : 0,
                        spec.run_as ? spec.run_as->groups.data() : nullptr,
                        spec.run_as ? spec.run_as->groups.size() : 0,
                        spec.umask ? static_cast<int>(*spec.umask) : -1,
                        spec.inherit_fds.data(),
                        spec.inherit_fds.size(),
                        spec.executable.c_str(),
                        argv.data(),
                        envp.data()};

  // Like posix_spawn: the child borrows our memory instead of copying the page tables of
  // a process with twenty libraries mapped (fork() cost 1.5-3.5 ms here), and we sleep
  // until it has exec'd or failed. Its own small stack keeps it off ours.
  constexpr std::size_t stack_size = 256 * 1024;
  void* stack = ::mmap(nullptr, stack_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
  if (stack == MAP_FAILED) return fail<pid_t>("mmap: " + base::errno_text());
  const pid_t pid = ::clone(child_main, static_cast<char*>(stack) + stack_size, CLONE_VM | CLONE_VFORK | SIGCHLD,
                            const_cast<child_args*>(&args));
  const int clone_errno = errno;
  ::munmap(stack, stack_size);
  if (pid < 0) return fail<pid_t>("clone: " + base::errno_text(clone_errno));

  report_write.reset();
  child_failure f{};
  ssize_t n;
  do n = ::read(report_read.get(), &f, sizeof f);
  while (n < 0 && errno == EINTR);
  if (n == 0) return pid;
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (n != static_cast<ssize_t>(sizeof f) || f.step < 1 || f.step > 8) return fail<pid_t>("the child died before exec");
  std::string what = step_name(f.step);
  if (f.step == 5) what += " (" + spec.executable + ")";
  return fail<pid_t>(what + ": " + base::errno_text(f.error));
}

// Long (~100 lines) on purpose: one poll loop over the child, its pidfd, the signals and the
// deadlines, whose cases share its state; split, they would pass that state around.
child_outcome supervise(pid_t child, const supervise_options& o) {
  child_outcome out;
  std::string status_text;
  bool status_open = o.status_fd >= 0;
  bool child_done = false;
  pid_t init = 0;
  base::unique_fd init_fd;  // a pidfd: no signal ever reaches a recycled pid
  bool init_done = false;
  int forwarded = 0;
  std::optional<clock::time_point> timeout_at, kill_at, give_up_at;
  if (o.timeout) timeout_at = clock::now() + *o.timeout;

  auto kill_everything = [&] {
    if (init_fd) pidfd_send_signal(init_fd.get(), SIGKILL);  // the pid namespace dies with its init
    if (!child_done) ::kill(child, SIGKILL);                 // and bwrap's reaper dies with bwrap
  };
  auto forward = [&](int sig) {
    if (!init_fd) {
      // CMD has not started yet: there is nothing to ask politely.
      kill_everything();
      return;
    }
    signal_workload(init, sig);
  };

  // Bounded by the child's life plus, once it is gone, 10 s for the namespace to empty.
  for (;;) {
    if (child_done && (init_done || !init_fd)) break;
    if (child_done && !give_up_at) {
      give_up_at = clock::now() + std::chrono::seconds(10);
      kill_everything();  // CMD is done; whatever it left behind goes with the namespace
    }
    std::array<pollfd, 3> fds{};
    nfds_t n = 0;
    fds[n++] = {o.signal_fd, POLLIN, 0};
    const nfds_t status_at = status_open ? n++ : 0;
    if (status_open) fds[status_at] = {o.status_fd, POLLIN, 0};
    const nfds_t init_at = init_fd && !init_done ? n++ : 0;
    if (init_at != 0) fds[init_at] = {init_fd.get(), POLLIN, 0};

    int wait_ms = -1;
    const auto now = clock::now();
    for (const auto& at : {timeout_at, kill_at, give_up_at})
      if (at) {
        const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(*at - now).count();
        const int m = static_cast<int>(std::clamp<long long>(ms, 0, 60'000));
        wait_ms = wait_ms < 0 ? m : std::min(wait_ms, m);
      }
    const int ready = ::poll(fds.data(), n, wait_ms);
    if (ready < 0 && errno != EINTR) break;

    if (status_open && (fds[status_at].revents & (POLLIN | POLLHUP)) != 0) {
      char buf[512];
      const auto r = ::read(o.status_fd, buf, sizeof buf);
      if (r > 0) status_text.append(buf, static_cast<std::size_t>(r));
      else if (r == 0 || errno != EAGAIN) status_open = false;
      if (!init_fd)
        if (auto p = json_number(status_text, "child-pid")) {
          init = static_cast<pid_t>(*p);
          init_fd.reset(pidfd_open(init));
          if (!init_fd) init_done = true;  // already gone
        }
      if (!out.cmd_status)
        if (auto c = json_number(status_text, "exit-code")) out.cmd_status = static_cast<int>(*c);
    }
    if (init_at != 0 && (fds[init_at].revents & POLLIN) != 0) init_done = true;

    signalfd_siginfo si{};
    while (::read(o.signal_fd, &si, sizeof si) == static_cast<ssize_t>(sizeof si)) {
      const int sig = static_cast<int>(si.ssi_signo);
      if (sig == SIGCHLD) continue;
      if (!out.signal_received) out.signal_received = sig;
      if (++forwarded >= 2) kill_everything();  // asked twice: stop waiting for CMD to be polite
      else forward(sig);
    }
    if (!child_done) {
      int status = 0;
      if (::waitpid(child, &status, WNOHANG) == child) {
        child_done = true;
        out.bwrap_status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        // bwrap wrote CMD's exit code before exiting: take what is in the pipe now.
        char buf[512];
        ssize_t r;
        while (status_open && (r = ::read(o.status_fd, buf, sizeof buf)) > 0)
          status_text.append(buf, static_cast<std::size_t>(r));
        if (!out.cmd_status)
          if (auto c = json_number(status_text, "exit-code")) out.cmd_status = static_cast<int>(*c);
      }
    }
    const auto t = clock::now();
    if (timeout_at && t >= *timeout_at) {
      timeout_at.reset();
      out.timed_out = true;
      forward(SIGTERM);
      kill_at = t + o.grace;
    }
    if (kill_at && t >= *kill_at) {
      kill_at.reset();
      kill_everything();
    }
    if (give_up_at && t >= *give_up_at) break;
  }
  return out;
}

}  // namespace airlock::launcher
