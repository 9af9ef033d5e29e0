// The pipes a bulk relay direction splices through (proxy/relay_spares.hpp).
#include "proxy/relay_spares.hpp"

#include <fcntl.h>
#include <unistd.h>

namespace airlock::proxy::relay_spares {

pipe_pair::~pipe_pair() {
  if (read >= 0) ::close(read);
  if (write >= 0) ::close(write);
}

std::unique_ptr<pipe_pair> pipe_pair::make() {
  int fds[2];
  if (::pipe2(fds, O_NONBLOCK | O_CLOEXEC) != 0) return nullptr;  // out of fds: the copy goes on
  auto p = std::make_unique<pipe_pair>();
  p->read = fds[0];
  p->write = fds[1];
  // Refused past fs.pipe-max-size or an unprivileged user's pipe pages: the default stays.
  if (const int got = ::fcntl(p->write, F_SETPIPE_SZ, pipe_bytes); got > 0) p->capacity = static_cast<std::size_t>(got);
  return p;
}

}  // namespace airlock::proxy::relay_spares
