#include "base/open_files.hpp"

#include <fcntl.h>
#include <sys/resource.h>

namespace airlock::base {

std::uint64_t raise_open_files_limit() noexcept {
  rlimit lim{};
  if (::getrlimit(RLIMIT_NOFILE, &lim) != 0) return 0;
  if (lim.rlim_cur < lim.rlim_max) {
    rlimit raised = lim;
    raised.rlim_cur = lim.rlim_max;
    if (::setrlimit(RLIMIT_NOFILE, &raised) == 0) lim = raised;
  }
  return lim.rlim_cur == RLIM_INFINITY ? UINT64_MAX : static_cast<std::uint64_t>(lim.rlim_cur);
}

bool spare_descriptor::lend() noexcept {
  if (!fd_) restore();
  if (!fd_) return false;
  fd_.reset();
  return true;
}

void spare_descriptor::restore() noexcept {
  if (!fd_) fd_.reset(::open("/dev/null", O_RDONLY | O_CLOEXEC));
}

}  // namespace airlock::base
