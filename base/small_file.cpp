#include "base/small_file.hpp"

#include "base/unique_fd.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace airlock::base {

std::string write_private_file(const std::filesystem::path& path, std::string_view text) {
  const auto tmp = std::filesystem::path(path.string() + ".tmp");
  auto failed = [&](const std::filesystem::path& p) {
    const std::string why = std::strerror(errno);
    ::unlink(tmp.c_str());
    return "cannot write " + p.string() + ": " + why;
  };
  {
    unique_fd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600));
    if (!fd) return failed(tmp);
    // An earlier temporary file (left by a crash) keeps its mode through O_TRUNC.
    if (::fchmod(fd.get(), 0600) != 0) return failed(tmp);
    for (std::size_t done = 0; done < text.size();) {
      const auto n = ::write(fd.get(), text.data() + done, text.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return failed(tmp);
      done += static_cast<std::size_t>(n);
    }
    if (::fsync(fd.get()) != 0) return failed(tmp);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) return failed(path);
  return {};
}

std::string read_small_file(const std::filesystem::path& path, std::string& out, std::size_t limit) {
  unique_fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return "cannot read " + path.string() + ": " + std::strerror(errno);
  out.clear();
  char buf[4096];
  for (;;) {
    const auto n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return "cannot read " + path.string() + ": " + std::strerror(errno);
    if (n == 0) return {};
    if (out.size() + static_cast<std::size_t>(n) > limit)
      return "cannot read " + path.string() + ": larger than " + std::to_string(limit) + " bytes";
    out.append(buf, static_cast<std::size_t>(n));
  }
}

}  // namespace airlock::base
