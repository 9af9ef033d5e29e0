#include "attribution/proc_scan.hpp"

#include "attribution/proc_parse.hpp"
#include "base/small_file.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <memory>

namespace airlock::attribution::proc {
namespace {

struct dir_closer {
  void operator()(DIR* d) const noexcept { ::closedir(d); }
};
using unique_dir = std::unique_ptr<DIR, dir_closer>;

// A directory entry's name as a pid; nullopt for anything else (self, net, ...).
std::optional<int> as_pid(const char* name) {
  int pid = 0;
  const auto end = name + std::strlen(name);
  const auto [ptr, ec] = std::from_chars(name, end, pid);
  if (ec != std::errc() || ptr != end || pid <= 0) return std::nullopt;
  return pid;
}

std::span<const std::byte> bytes(const std::string& s) { return std::as_bytes(std::span(s)); }

}  // namespace

std::string scanner::path(int pid, const char* file) const { return root_ + "/" + std::to_string(pid) + "/" + file; }

std::optional<ns_id> scanner::netns_of(int pid) const {
  struct stat st {};
  if (::stat(path(pid, "ns/net").c_str(), &st) != 0) return std::nullopt;
  return ns_id{static_cast<std::uint64_t>(st.st_dev), static_cast<std::uint64_t>(st.st_ino)};
}

std::optional<int> scanner::socket_owner(std::uint64_t inode, const ns_id& ns) const {
  // Every path below is relative to an open directory: on a host with many processes the
  // cost of a scan is path walks in /proc, and these are one or two components each.
  const unique_dir procs(::opendir(root_.c_str()));
  if (!procs) return std::nullopt;
  const int procs_fd = ::dirfd(procs.get());
  const std::string want = "socket:[" + std::to_string(inode) + "]";
  std::optional<int> best;
  std::uint64_t best_start = 0;
  while (const dirent* entry = ::readdir(procs.get())) {
    const auto pid = as_pid(entry->d_name);
    if (!pid) continue;
    char rel[32];
    std::snprintf(rel, sizeof rel, "%d/ns/net", *pid);
    struct stat st {};
    if (::fstatat(procs_fd, rel, &st, 0) != 0 ||
        ns_id{static_cast<std::uint64_t>(st.st_dev), static_cast<std::uint64_t>(st.st_ino)} != ns) {
      continue;
    }
    std::snprintf(rel, sizeof rel, "%d/fd", *pid);
    const int fd_dir = ::openat(procs_fd, rel, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd_dir < 0) continue;
    const unique_dir fds(::fdopendir(fd_dir));
    if (!fds) {
      ::close(fd_dir);
      continue;
    }
    bool holds = false;
    while (const dirent* fd = ::readdir(fds.get())) {
      if (fd->d_name[0] == '.') continue;
      std::array<char, 64> target{};
      const auto n = ::readlinkat(fd_dir, fd->d_name, target.data(), target.size());
      if (n > 0 && std::string_view(target.data(), static_cast<std::size_t>(n)) == want) {
        holds = true;
        break;
      }
    }
    if (!holds) continue;
    const auto text = base::read_file(path(*pid, "stat"), 1024, base::past_limit::cut);
    const auto fields = text ? parse_stat(bytes(*text)) : stat_error::bad_field;
    const std::uint64_t start = fields ? fields->start_time : 0;
    if (!best || start > best_start || (start == best_start && *pid > *best)) {
      best = *pid;
      best_start = start;
    }
  }
  return best;
}

std::vector<process_info> scanner::parent_chain(int pid, const ns_id& ns) const {
  std::vector<process_info> chain;
  while (pid > 1 && chain.size() < max_chain && netns_of(pid) == ns) {
    const auto text = base::read_file(path(pid, "stat"), 1024, base::past_limit::cut);
    if (!text) break;
    const auto fields = parse_stat(bytes(*text));
    if (!fields || fields->pid != pid) break;
    // cmdline can be long; 4 KiB is far more than can show after escaping (see parse_cmdline)
    // but still holds the trailing NULs of any argv that fits.
    const auto args = base::read_file(path(pid, "cmdline"), 4096, base::past_limit::cut);
    chain.push_back(process_info{pid, fields->comm, args ? parse_cmdline(bytes(*args)) : std::string()});
    // A parent already in the chain would be a pid reused mid-walk: stop rather than loop.
    for (const auto& p : chain)
      if (p.pid == fields->ppid) return chain;
    pid = fields->ppid;
  }
  return chain;
}

}  // namespace airlock::attribution::proc
