#include "daemon/sandbox_service.hpp"

#include "base/deadline.hpp"
#include "base/errno_text.hpp"
#include "base/spawn.hpp"
#include "base/unique_fd.hpp"
#include "control/sandbox_call.hpp"

#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/this_coro.hpp>

#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <vector>

namespace airlock::daemon {
namespace {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using seqpacket = asio::generic::seq_packet_protocol;
using base::nothrow;

// The helper's environment: airlock's own, never the caller's.
constexpr const char* helper_env[] = {"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", nullptr};
// Descriptors are moved this high before the helper's are laid out at 0..: no dup2 of the
// layout can overwrite a source still to be copied.
constexpr int staging_floor = 64;
static_assert(staging_floor > 5 + static_cast<int>(control::max_call_paths));

struct received_call {
  std::string text;
  std::vector<base::unique_fd> fds;
  bool truncated = false;
};

// One packet and the descriptors riding on it; every descriptor is ours to close.
std::optional<received_call> receive(int s) {
  received_call out;
  out.text.resize(control::max_call_bytes);
  constexpr std::size_t most_fds = control::call_fixed_fds + control::max_call_paths;
  alignas(cmsghdr) std::array<char, CMSG_SPACE(sizeof(int) * most_fds)> control_buf{};
  iovec iov{out.text.data(), out.text.size()};
  msghdr m{};
  m.msg_iov = &iov;
  m.msg_iovlen = 1;
  m.msg_control = control_buf.data();
  m.msg_controllen = control_buf.size();
  const auto n = ::recvmsg(s, &m, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
  if (n < 0) return std::nullopt;
  for (cmsghdr* c = CMSG_FIRSTHDR(&m); c != nullptr; c = CMSG_NXTHDR(&m, c))
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
      const std::size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
      for (std::size_t i = 0; i < count; ++i) {
        int fd;
        std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
        out.fds.emplace_back(fd);
      }
    }
  out.truncated = (m.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) != 0;
  out.text.resize(static_cast<std::size_t>(n));
  return out;
}

struct peer {
  uid_t uid;
  gid_t gid;
  std::vector<std::uint32_t> groups;
  std::string user;
};

std::optional<peer> peer_of(int s) {
  ucred cred{};
  socklen_t len = sizeof cred;
  if (::getsockopt(s, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) return std::nullopt;
  peer p{cred.uid, cred.gid, {}, std::to_string(cred.uid)};
  std::vector<gid_t> groups(64);
  len = static_cast<socklen_t>(groups.size() * sizeof(gid_t));
  if (::getsockopt(s, SOL_SOCKET, SO_PEERGROUPS, groups.data(), &len) != 0) {
    if (errno != ERANGE) return std::nullopt;
    groups.resize(len / sizeof(gid_t));
    if (::getsockopt(s, SOL_SOCKET, SO_PEERGROUPS, groups.data(), &len) != 0) return std::nullopt;
  }
  groups.resize(len / sizeof(gid_t));
  p.groups.assign(groups.begin(), groups.end());
  std::array<char, 4096> buf{};
  passwd pw{};
  passwd* found = nullptr;
  if (::getpwuid_r(cred.uid, &pw, buf.data(), buf.size(), &found) == 0 && found != nullptr) p.user = pw.pw_name;
  return p;
}

base::unique_fd order_file(const control::sandbox_order& order) {
  const auto text = control::encode(order);
  base::unique_fd fd(::memfd_create("airlock-order", MFD_CLOEXEC | MFD_ALLOW_SEALING));
  if (!fd || ::write(fd.get(), text.data(), text.size()) != static_cast<ssize_t>(text.size()) ||
      ::lseek(fd.get(), 0, SEEK_SET) != 0 ||
      ::fcntl(fd.get(), F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL) != 0)
    return {};
  return fd;
}

// The helper: stdin, stdout, stderr from the caller, the order on 3, the working directory on
// 4 (also its cwd), the paths after it; nothing else of the daemon's. Its own session: the
// daemon's terminal, if any, is not the caller's business.
std::optional<pid_t> start_helper(const sandbox_service& service, const std::vector<base::unique_fd>& call_fds,
                                  const base::unique_fd& order) {
  std::vector<base::unique_fd> staged;  // the layout's sources, moved above it
  auto stage = [&](int fd) { staged.emplace_back(::fcntl(fd, F_DUPFD_CLOEXEC, staging_floor)); };
  for (int i = 0; i < 3; ++i) stage(call_fds[static_cast<std::size_t>(i)].get());
  stage(order.get());
  for (std::size_t i = 3; i < call_fds.size(); ++i) stage(call_fds[i].get());
  for (const auto& s : staged)
    if (!s) return std::nullopt;

  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attr;
  ::posix_spawn_file_actions_init(&actions);
  ::posix_spawnattr_init(&attr);
  for (std::size_t i = 0; i < staged.size(); ++i)
    ::posix_spawn_file_actions_adddup2(&actions, staged[i].get(), static_cast<int>(i));
  ::posix_spawn_file_actions_addfchdir_np(&actions, 4);
  ::posix_spawn_file_actions_addclosefrom_np(&actions, static_cast<int>(staged.size()));
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  ::posix_spawnattr_setsigmask(&attr, &none);
  ::posix_spawnattr_setsigdefault(&attr, &all);
  ::posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  const char* argv[] = {"airlock", "run", "--order-fd", "3", nullptr};
  pid_t pid = 0;
  const int e = ::posix_spawn(&pid, service.executable.c_str(), &actions, &attr, const_cast<char* const*>(argv),
                              const_cast<char* const*>(helper_env));
  ::posix_spawn_file_actions_destroy(&actions);
  ::posix_spawnattr_destroy(&attr);
  if (e != 0) return std::nullopt;
  return pid;
}

void send_text(int s, const std::string& text) { (void)::send(s, text.data(), text.size(), MSG_NOSIGNAL); }

// A helper the loop lets go of (shutdown destroys the coroutine) is asked to end its
// sandbox, as when its caller goes away: it tears down on its own.
struct helper_process {
  pid_t pid = 0;
  base::unique_fd pidfd;
  bool reaped = false;
  ~helper_process() {
    if (pid > 0 && !reaped) ::syscall(SYS_pidfd_send_signal, pidfd.get(), SIGHUP, nullptr, 0);
  }
  void signal(int sig) const {
    if (!reaped) ::syscall(SYS_pidfd_send_signal, pidfd.get(), sig, nullptr, 0);
  }
};

// Counts a caller's helper from start to exit, whatever path the coroutine leaves by.
struct running_slot {
  sandbox_service& service;
  uid_t uid;
  running_slot(sandbox_service& s, uid_t u) : service(s), uid(u) {
    ++service.running;
    ++service.per_user[uid];
  }
  ~running_slot() {
    --service.running;
    if (--service.per_user[uid] == 0) service.per_user.erase(uid);
  }
  running_slot(const running_slot&) = delete;
  running_slot& operator=(const running_slot&) = delete;
};

void refuse(int s, const std::optional<peer>& who, const std::string& why) {
  std::fprintf(stderr, "airlock: sandbox call from uid %s refused: %s\n", who ? std::to_string(who->uid).c_str() : "?",
               why.c_str());
  send_text(s, control::error_message(why));
}

// Counts a connection from accept until its call is read (or it gave up).
struct pending_slot {
  std::size_t& pending;
  explicit pending_slot(std::size_t& p) : pending(p) { ++pending; }
  ~pending_slot() { --pending; }
  pending_slot(const pending_slot&) = delete;
  pending_slot& operator=(const pending_slot&) = delete;
};

asio::awaitable<void> serve_call(std::shared_ptr<seqpacket::socket> socket, sandbox_service& service) {
  const int s = socket->native_handle();
  {
    // A member of the group who opens connections and sends nothing holds a slot for 10 s.
    pending_slot waiting(service.pending);
    if (!co_await base::with_deadline(socket->async_wait(seqpacket::socket::wait_read, asio::use_awaitable), 10s))
      co_return;
  }
  const auto who = peer_of(s);
  auto got = receive(s);
  if (got && got->text.empty() && got->fds.empty()) co_return;  // went away without a word: nothing to say
  if (!who || !got) co_return refuse(s, who, "the call could not be read");
  if (got->truncated)
    co_return refuse(s, who,
                     "the call is larger than " + std::to_string(control::max_call_bytes / 1024) +
                         " KiB or carries too many descriptors");
  auto call = control::decode_call(got->text);
  if (!call) co_return refuse(s, who, call.error());
  if (got->fds.size() != control::call_fixed_fds + call->paths)
    co_return refuse(s, who,
                     "the call names " + std::to_string(call->paths) + " paths but carries " +
                         std::to_string(got->fds.size()) + " descriptors");
  struct stat dir {};
  if (::fstat(got->fds[3].get(), &dir) != 0 || !S_ISDIR(dir.st_mode))
    co_return refuse(s, who, "the call's fourth descriptor is not the working directory");
  if (service.running >= service.max_running)
    co_return refuse(s, who,
                     "the daemon runs " + std::to_string(service.running) +
                         " sandboxes for callers already; try again when one ends");
  if (auto at = service.per_user.find(who->uid); at != service.per_user.end() && at->second >= service.max_per_user)
    co_return refuse(s, who, "you run " + std::to_string(at->second) + " sandboxes through the daemon already");

  control::sandbox_order order;
  order.call = std::move(*call);
  order.uid = who->uid;
  order.gid = who->gid;
  order.groups = who->groups;
  order.user = who->user;
  order.control = service.control;
  order.state_dir = service.state_dir;
  order.pool = service.pool;
  order.first_fd = 4;
  const auto order_fd = order_file(order);
  if (!order_fd) co_return refuse(s, who, "the daemon could not write the order: " + base::errno_text());
  running_slot slot(service, who->uid);
  helper_process helper;
  const auto pid = start_helper(service, got->fds, order_fd);
  if (!pid) co_return refuse(s, who, "the daemon could not start airlock run: " + base::errno_text());
  helper.pid = *pid;
  helper.pidfd.reset(static_cast<int>(::syscall(SYS_pidfd_open, *pid, 0)));
  got->fds.clear();  // the helper holds the caller's descriptors now
  if (!helper.pidfd) {
    // Linux before 5.3: no way to wait for the helper on the loop without blocking it.
    ::kill(*pid, SIGKILL);
    ::waitpid(*pid, nullptr, 0);
    helper.reaped = true;
    co_return refuse(s, who, "this kernel has no pidfd_open (Linux 5.3 or later is needed)");
  }

  using namespace asio::experimental::awaitable_operators;
  asio::posix::stream_descriptor exited(co_await asio::this_coro::executor, ::dup(helper.pidfd.get()));
  bool caller_gone = false;
  for (;;) {
    if (caller_gone) {
      // The caller went away (killed, its terminal closed): SIGHUP, as a terminal would; a
      // second one after 5 s stops CMD outright. The helper tears the sandbox down either way.
      helper.signal(SIGHUP);
      asio::steady_timer again(co_await asio::this_coro::executor, 5s);
      auto first = co_await (exited.async_wait(asio::posix::stream_descriptor::wait_read, nothrow) ||
                             again.async_wait(nothrow));
      if (first.index() == 1) {
        helper.signal(SIGHUP);
        co_await exited.async_wait(asio::posix::stream_descriptor::wait_read, nothrow);
      }
      break;
    }
    auto which = co_await (exited.async_wait(asio::posix::stream_descriptor::wait_read, nothrow) ||
                           socket->async_wait(seqpacket::socket::wait_read, nothrow));
    if (which.index() == 0) break;
    char buf[256];
    const auto n = ::recv(s, buf, sizeof buf, MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
    if (n <= 0) {
      caller_gone = true;
      continue;
    }
    if (auto sig = control::decode_signal(std::string_view(buf, static_cast<std::size_t>(n)));
        sig && (*sig == SIGINT || *sig == SIGTERM || *sig == SIGHUP || *sig == SIGQUIT))
      helper.signal(*sig);
  }
  int status = 0;
  ::waitpid(*pid, &status, 0);  // it has exited (its pidfd said so): no wait
  helper.reaped = true;
  if (!caller_gone)
    send_text(s, control::exit_message(WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status)));
}

}  // namespace

asio::awaitable<void> serve_sandbox_calls(sandbox_acceptor& acceptor, sandbox_service& service) {
  for (;;) {
    auto socket = std::make_shared<seqpacket::socket>(acceptor.get_executor());
    auto [ec] = co_await acceptor.async_accept(*socket, nothrow);
    if (ec == asio::error::operation_aborted || !acceptor.is_open()) co_return;
    if (ec) {
      // Out of descriptors and the like: wait a moment rather than spin.
      asio::steady_timer pause(acceptor.get_executor(), 100ms);
      co_await pause.async_wait(nothrow);
      continue;
    }
    if (service.pending >= service.max_pending) {
      // Told, not logged: a flood of these would flood the daemon's stderr.
      send_text(socket->native_handle(),
                control::error_message("too many sandbox calls are being made at once; try again"));
      continue;
    }
    base::spawn_session(acceptor.get_executor(), serve_call(std::move(socket), service),
                        [](const char* what) { std::fprintf(stderr, "airlock: a sandbox call stopped: %s\n", what); });
  }
}

}  // namespace airlock::daemon
