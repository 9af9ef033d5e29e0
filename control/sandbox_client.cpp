#include "control/sandbox_client.hpp"

#include "base/errno_text.hpp"
#include "base/unique_fd.hpp"

#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <cerrno>
#include <cstring>
#include <vector>

namespace airlock::control {
namespace {

using base::fail;

base::result<base::unique_fd> connect_to(const std::string& path) {
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  if (path.size() >= sizeof sa.sun_path) return fail<base::unique_fd>("the socket path " + path + " is too long");
  std::memcpy(sa.sun_path, path.c_str(), path.size() + 1);
  base::unique_fd s(::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0));
  if (!s) return fail<base::unique_fd>("socket: " + base::errno_text());
  if (::connect(s.get(), reinterpret_cast<const sockaddr*>(&sa), sizeof sa) == 0) return s;
  const int e = errno;
  if (e == ENOENT || e == ECONNREFUSED)
    return fail<base::unique_fd>("no airlock daemon makes sandboxes at " + path +
                                 " (start it: systemctl start airlock; its config needs listen.sandbox), or run "
                                 "airlock run as root");
  if (e == EACCES || e == EPERM)
    return fail<base::unique_fd>("permission denied on " + path +
                                 ": airlock run without root needs membership of the group the daemon gives it "
                                 "(usually airlock: sudo usermod -aG airlock $USER, then log in again)");
  return fail<base::unique_fd>("connect to " + path + ": " + base::errno_text(e));
}

base::result<void> send_call(int s, const std::string& text, std::span<const int> fds) {
  std::vector<char> control(CMSG_SPACE(sizeof(int) * fds.size()));
  iovec iov{const_cast<char*>(text.data()), text.size()};
  msghdr m{};
  m.msg_iov = &iov;
  m.msg_iovlen = 1;
  m.msg_control = control.data();
  m.msg_controllen = control.size();
  cmsghdr* c = CMSG_FIRSTHDR(&m);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
  std::memcpy(CMSG_DATA(c), fds.data(), sizeof(int) * fds.size());
  if (::sendmsg(s, &m, MSG_NOSIGNAL) != static_cast<ssize_t>(text.size()))
    return "send the sandbox call: " + base::errno_text();
  return {};
}

}  // namespace

base::result<int> call_sandbox(const std::string& socket_path, const sandbox_call& call, std::span<const int> fds) {
  const auto text = encode(call);
  if (text.size() > max_call_bytes)
    return fail<int>("the arguments and environment are " + std::to_string(text.size() / 1024) +
                     " KiB; the daemon takes at most " + std::to_string(max_call_bytes / 1024) +
                     "; CMD was not started");
  // Signals first: a Ctrl-C from now on belongs to CMD, and reaches it through the daemon.
  sigset_t set;
  sigemptyset(&set);
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) sigaddset(&set, sig);
  if (::sigprocmask(SIG_BLOCK, &set, nullptr) != 0) return fail<int>("block signals: " + base::errno_text());
  base::unique_fd signals(::signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK));
  if (!signals) return fail<int>("signalfd: " + base::errno_text());
  auto s = connect_to(socket_path);
  if (!s) return fail<int>(s.error() + "; CMD was not started");
  if (auto r = send_call(s->get(), text, fds); !r) return fail<int>(r.error() + "; CMD was not started");

  // Until the daemon reports: its answer, or a signal to pass on. No deadline: CMD runs as
  // long as it runs, and --timeout is the daemon's to enforce.
  for (;;) {
    pollfd p[2] = {{s->get(), POLLIN, 0}, {signals.get(), POLLIN, 0}};
    if (::poll(p, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return fail<int>("poll: " + base::errno_text());
    }
    signalfd_siginfo si{};
    while (::read(signals.get(), &si, sizeof si) == static_cast<ssize_t>(sizeof si)) {
      const auto m = signal_message(static_cast<int>(si.ssi_signo));
      (void)::send(s->get(), m.data(), m.size(), MSG_NOSIGNAL);
    }
    if ((p[0].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
    char buf[4096];
    const auto n = ::recv(s->get(), buf, sizeof buf, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0)
      return fail<int>("the daemon closed the connection before CMD's exit status came back (CMD may have run; "
                       "the daemon's log says why)");
    auto outcome = decode_outcome(std::string_view(buf, static_cast<std::size_t>(n)));
    if (!outcome) continue;  // a later version's message; ours are exit and error
    if (outcome->exit_status) return *outcome->exit_status;
    return fail<int>(outcome->error + "; CMD was not started");  // refused before anything was made
  }
}

}  // namespace airlock::control
