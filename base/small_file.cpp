#include "base/small_file.hpp"

#include "base/errno_text.hpp"
#include "base/unique_fd.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <limits>
#include <utility>

namespace airlock::base {

result<std::string> read_file(int fd, std::size_t limit, past_limit past) {
  // One byte past the limit tells a file longer than it from one of exactly `limit` bytes.
  std::size_t want = limit;
  if (past == past_limit::fails && limit < std::numeric_limits<std::size_t>::max()) ++want;
  std::string out;
  std::size_t got = 0;
  while (got < want) {
    if (got == out.size()) out.resize(std::min(want, std::max<std::size_t>(4096, 2 * out.size())));
    const auto n = ::read(fd, out.data() + got, out.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return result<std::string>(boost::system::in_place_error, errno_text());
    if (n == 0) break;
    got += static_cast<std::size_t>(n);
  }
  out.resize(got);
  if (got > limit)
    return result<std::string>(boost::system::in_place_error, "larger than " + std::to_string(limit) + " bytes");
  return result<std::string>(boost::system::in_place_value, std::move(out));
}

result<std::string> read_file(const std::filesystem::path& path, std::size_t limit, past_limit past) {
  const auto failed = [&](const std::string& why) {
    return result<std::string>(boost::system::in_place_error, "cannot read " + path.string() + ": " + why);
  };
  const unique_fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return failed(errno_text());
  auto text = read_file(fd.get(), limit, past);
  if (!text) return failed(text.error());
  return text;
}

std::string write_private_file(const std::filesystem::path& path, std::string_view text) {
  const auto tmp = std::filesystem::path(path.string() + ".tmp");
  auto failed = [&](const std::filesystem::path& p) {
    const std::string why = errno_text();
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

}  // namespace airlock::base
