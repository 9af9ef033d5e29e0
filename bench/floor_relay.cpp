// floor_relay PORT [THREADS]: the least a filtering transparent proxy can do, as bench/run's
// `floor` target. It accepts on PORT (IP_TRANSPARENT, for nft TPROXY), reads the client's
// first bytes (where a filter finds the SNI or the Host: no proxy that judges them may
// connect before), connects to the accepted socket's local address (the original
// destination), sends them and relays both ways: no parsing, policy, resolution, log or
// limits. Each way copies through a 16 KiB buffer until a read fills it, then moves
// socket -> pipe -> socket with splice(2), as airlock's relay does; one edge-triggered epoll
// and one listener (SO_REUSEPORT) per thread, as nginx works.
//
// What it is for: a proxy on this machine shares two CPUs with the client and the origin,
// so its rate is bounded by what the kernel's work for two TCP connections costs there.
// This relay measures that bound in the same run as everyone else (bench/README.md, "The
// floor"). A protocol where the server speaks first never gets an answer through it.
//
// Never a product: it relays anything to anywhere. It listens only inside bench/run's
// gateway namespace.
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fcntl.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

constexpr std::size_t copy_size = 16 * 1024;
constexpr int pipe_size = 1 << 20;

struct connection;

// One direction: bytes read from `from` are written to `to`.
struct way {
  int from = -1;
  int to = -1;
  int pipe_out = -1, pipe_in = -1;  // once bulk
  std::size_t in_pipe = 0;
  std::string unsent;  // what a short send left of a copied step
  bool bulk = false;
  bool ended = false;     // `from` read to its FIN
  bool fin_sent = false;  // and `to` shut for writing, once all before the FIN left
};

struct side {
  connection* c;
};

struct connection {
  int fd[2] = {-1, -1};  // client, upstream
  way ways[2];
  side sides[2];
  bool dead = false;
};

thread_local char t_buffer[copy_size];
thread_local std::vector<connection*> t_dead;  // freed after the batch of events that may name them

enum class step { waiting, failed };

bool send_all(way& w, const char* data, std::size_t n) {
  ssize_t sent = send(w.to, data, n, MSG_NOSIGNAL | MSG_DONTWAIT);
  if (sent < 0) {
    if (errno != EAGAIN) return false;  // (EAGAIN also while the upstream SYN is unanswered)
    sent = 0;
  }
  const auto done = static_cast<std::size_t>(sent);
  if (done < n) w.unsent.append(data + done, n - done);
  return true;
}

// Moves what can move now; returns when both ends would block.
step move(way& w) {
  for (;;) {
    if (!w.unsent.empty()) {
      ssize_t n = send(w.to, w.unsent.data(), w.unsent.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n < 0) return errno == EAGAIN ? step::waiting : step::failed;
      w.unsent.erase(0, static_cast<std::size_t>(n));
      if (!w.unsent.empty()) return step::waiting;
    }
    while (w.in_pipe > 0) {
      ssize_t n = splice(w.pipe_out, nullptr, w.to, nullptr, w.in_pipe, SPLICE_F_NONBLOCK | SPLICE_F_MOVE);
      if (n < 0) return errno == EAGAIN ? step::waiting : step::failed;
      w.in_pipe -= static_cast<std::size_t>(n);
    }
    if (w.ended) {
      // Not before: a shutdown while the upstream SYN is unanswered would abort the connect.
      if (!w.fin_sent) shutdown(w.to, SHUT_WR);
      w.fin_sent = true;
      return step::waiting;
    }
    ssize_t n;
    if (w.bulk) {
      n = splice(w.from, nullptr, w.pipe_in, nullptr, pipe_size, SPLICE_F_NONBLOCK | SPLICE_F_MOVE);
      if (n > 0) w.in_pipe = static_cast<std::size_t>(n);
    } else {
      n = recv(w.from, t_buffer, copy_size, MSG_DONTWAIT);
      if (n > 0 && !send_all(w, t_buffer, static_cast<std::size_t>(n))) return step::failed;
      if (n == static_cast<ssize_t>(copy_size)) {
        int p[2];
        if (pipe2(p, O_NONBLOCK) == 0) {
          fcntl(p[1], F_SETPIPE_SZ, pipe_size);  // (refused past /proc/sys/fs/pipe-max-size: smaller steps)
          w.pipe_out = p[0];
          w.pipe_in = p[1];
          w.bulk = true;
        }
      }
    }
    if (n == 0) {
      w.ended = true;  // (the next turn passes the FIN on, after what is still unsent)
      continue;
    }
    if (n < 0) return errno == EAGAIN ? step::waiting : step::failed;
  }
}

void finish(int loop, connection* c) {
  for (int fd : c->fd)
    if (fd >= 0) {
      epoll_ctl(loop, EPOLL_CTL_DEL, fd, nullptr);
      close(fd);
    }
  for (way& w : c->ways) {
    if (w.pipe_in >= 0) close(w.pipe_in);
    if (w.pipe_out >= 0) close(w.pipe_out);
  }
  c->dead = true;
  t_dead.push_back(c);
}

void watch(int loop, side& s, int fd) {
  epoll_event e{};
  e.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET;
  e.data.ptr = &s;
  epoll_ctl(loop, EPOLL_CTL_ADD, fd, &e);
}

// The client's first bytes, then the connect (to the original destination) and their send;
// false when the connection cannot go on.
bool open_upstream(int loop, connection* c) {
  const ssize_t n = recv(c->fd[0], t_buffer, copy_size, MSG_DONTWAIT);
  if (n < 0 && errno == EAGAIN) return true;  // not here yet: the next edge
  if (n <= 0) return false;
  sockaddr_storage dst{};
  socklen_t len = sizeof dst;
  getsockname(c->fd[0], reinterpret_cast<sockaddr*>(&dst), &len);  // TPROXY: the original destination
  c->fd[1] = socket(dst.ss_family, SOCK_STREAM | SOCK_NONBLOCK, 0);
  if (c->fd[1] < 0) return false;
  int one = 1;
  setsockopt(c->fd[1], IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  if (connect(c->fd[1], reinterpret_cast<sockaddr*>(&dst), len) != 0 && errno != EINPROGRESS) return false;
  c->ways[0].to = c->ways[1].from = c->fd[1];
  watch(loop, c->sides[1], c->fd[1]);
  return send_all(c->ways[0], t_buffer, static_cast<std::size_t>(n));  // (EAGAIN while the SYN is unanswered)
}

void on_ready(int loop, connection* c) {
  if (c->dead) return;
  if (c->fd[1] < 0) {
    if (!open_upstream(loop, c)) return finish(loop, c);
    if (c->fd[1] < 0) return;
  }
  for (way& w : c->ways)
    if (move(w) == step::failed) {
      finish(loop, c);  // a reset or a refused connect: the closes end both
      return;
    }
  const auto done = [](const way& w) { return w.fin_sent; };
  if (done(c->ways[0]) && done(c->ways[1])) finish(loop, c);
}

void accept_all(int loop, int listener) {
  for (;;) {
    const int client = accept4(listener, nullptr, nullptr, SOCK_NONBLOCK);
    if (client < 0) return;
    auto* c = new connection;
    c->fd[0] = c->ways[0].from = c->ways[1].to = client;
    c->sides[0].c = c->sides[1].c = c;
    watch(loop, c->sides[0], client);  // (reported writable at once: the first read comes then)
  }
}

int open_listener(std::uint16_t port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one);
  setsockopt(fd, SOL_IP, IP_TRANSPARENT, &one, sizeof one);
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);  // inherited by accepted sockets
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || listen(fd, 8192) != 0) {
    std::fprintf(stderr, "floor_relay: cannot listen on port %u: %s\n", port, std::strerror(errno));
    std::exit(1);
  }
  return fd;
}

[[noreturn]] void run(int listener) {
  int loop = epoll_create1(0);
  epoll_event e{};
  e.events = EPOLLIN | EPOLLET;
  e.data.ptr = nullptr;
  epoll_ctl(loop, EPOLL_CTL_ADD, listener, &e);
  epoll_event events[256];
  for (;;) {
    for (connection* c : t_dead) delete c;
    t_dead.clear();
    int n = epoll_wait(loop, events, 256, -1);
    for (int i = 0; i < n; ++i) {
      if (events[i].data.ptr == nullptr) accept_all(loop, listener);
      else on_ready(loop, static_cast<side*>(events[i].data.ptr)->c);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  static constexpr const char* usage =
      "usage: floor_relay PORT [THREADS]\n"
      "A transparent TCP relay with no policy (nft TPROXY to PORT), for bench/run's floor target only.\n";
  if (argc == 2 && std::strcmp(argv[1], "--help") == 0) {
    std::fputs(usage, stdout);
    return 0;
  }
  if (argc < 2 || argc > 3) {
    std::fputs(usage, stderr);
    return 2;
  }
  const int port = std::atoi(argv[1]);
  const int threads = argc == 3 ? std::atoi(argv[2]) : 1;
  if (port <= 0 || port > 65535 || threads <= 0) {
    std::fprintf(stderr, "floor_relay: bad port or thread count\n");
    return 2;
  }
  std::vector<int> listeners;  // all bound before any thread runs: "ready" means every one listens
  for (int t = 0; t < threads; ++t) listeners.push_back(open_listener(static_cast<std::uint16_t>(port)));
  std::vector<std::thread> loops;
  for (int fd : listeners) loops.emplace_back(run, fd);
  std::printf("floor_relay: ready on port %d, %d threads\n", port, threads);
  std::fflush(stdout);
  for (auto& t : loops) t.join();
}
