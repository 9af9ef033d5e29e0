#include "launcher/netns.hpp"

#include "base/errno_text.hpp"

#include <fcntl.h>
#include <linux/nsfs.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>

#include <cstring>
#include <optional>
#include <thread>

namespace airlock::launcher {
namespace {

using base::fail;

// Writes a sysctl of the calling thread's network namespace (/proc/sys/net is per
// namespace, looked up through the opening thread). A kernel without IPv6 has no such
// file, which is as good as disabled.
base::result<void> write_net_sysctl(const char* path, const char* value) {
  base::unique_fd fd(::open(path, O_WRONLY | O_CLOEXEC));
  if (!fd) {
    if (errno == ENOENT) return {};
    return fail<void>(std::string("open ") + path + ": " + base::errno_text());
  }
  if (::write(fd.get(), value, std::strlen(value)) < 0)
    return fail<void>(std::string("write ") + path + ": " + base::errno_text());
  return {};
}

}  // namespace

base::result<sandbox_netns> create_netns(const std::filesystem::path& pin) {
  std::optional<base::result<sandbox_netns>> made;
  // unshare() moves only the calling thread, so a short-lived helper does it and hands
  // back an fd to the namespace and a netlink socket opened inside it.
  std::thread helper([&] {
    if (::unshare(CLONE_NEWNET) != 0) {
      made = fail<sandbox_netns>("create network namespace: " + base::errno_text() +
                                 (errno == EPERM ? " (airlock run needs root: CAP_SYS_ADMIN and CAP_NET_ADMIN)" : ""));
      return;
    }
    base::unique_fd ns(::open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC));
    if (!ns) {
      made = fail<sandbox_netns>("open the new network namespace: " + base::errno_text());
      return;
    }
    for (const char* path :
         {"/proc/sys/net/ipv6/conf/all/disable_ipv6", "/proc/sys/net/ipv6/conf/default/disable_ipv6"}) {
      if (auto r = write_net_sysctl(path, "1"); !r) {
        made = fail<sandbox_netns>("disable IPv6 in the sandbox: " + r.error());
        return;
      }
    }
    auto rtnl = rtnetlink::open();
    if (!rtnl) {
      made = fail<sandbox_netns>(rtnl.error());
      return;
    }
    auto lo = rtnl->link_index("lo");
    if (!lo) {
      made = fail<sandbox_netns>(lo.error());
      return;
    }
    if (auto up = rtnl->link_up(*lo); !up) {
      made = fail<sandbox_netns>("loopback: " + up.error());
      return;
    }
    made = sandbox_netns{std::move(ns), std::move(*rtnl)};
  });
  helper.join();
  if (!made->has_value() || pin.empty()) return std::move(*made);

  std::error_code ec;
  std::filesystem::create_directories(pin.parent_path(), ec);
  if (ec) return fail<sandbox_netns>("create " + pin.parent_path().string() + ": " + ec.message());
  base::unique_fd file(::open(pin.c_str(), O_RDONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0444));
  if (!file) return fail<sandbox_netns>("create " + pin.string() + ": " + base::errno_text());
  file.reset();
  const std::string source = "/proc/self/fd/" + std::to_string((*made)->ns.get());
  if (::mount(source.c_str(), pin.c_str(), nullptr, MS_BIND, nullptr) != 0) {
    const auto e = errno;
    ::unlink(pin.c_str());
    return fail<sandbox_netns>("pin the network namespace at " + pin.string() + ": " + base::errno_text(e));
  }
  return std::move(*made);
}

base::result<bool> remove_netns_pin(const std::filesystem::path& pin) {
  // MNT_DETACH: a process that still has it open (ip netns exec in another shell) keeps
  // its view; the name is gone at once. EINVAL: not a mount point here (the pin was made
  // in another mount namespace, or half-made); the file still goes.
  if (::umount2(pin.c_str(), MNT_DETACH) != 0 && errno != EINVAL && errno != ENOENT)
    return fail<bool>("unmount " + pin.string() + ": " + base::errno_text());
  if (::unlink(pin.c_str()) != 0) {
    if (errno == ENOENT) return false;
    return fail<bool>("remove " + pin.string() + ": " + base::errno_text());
  }
  return true;
}

base::result<base::unique_fd> open_netns(const std::string& path_or_name) {
  std::string path = path_or_name;
  if (path.find('/') == std::string::npos) path = std::string(netns_dir) + "/" + path;
  base::unique_fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return fail<base::unique_fd>("open network namespace " + path + ": " + base::errno_text());
  // setns would refuse anything else too, but say so before any work is done.
  if (::ioctl(fd.get(), NS_GET_NSTYPE) != CLONE_NEWNET)
    return fail<base::unique_fd>(path + " is not a network namespace");
  return fd;
}

std::string netns_identity(int fd) {
  struct stat st {};
  if (fd >= 0) {
    if (::fstat(fd, &st) != 0) return {};
  } else if (::stat("/proc/thread-self/ns/net", &st) != 0) {
    return {};
  }
  return "net:[" + std::to_string(st.st_ino) + "]";
}

base::result<void> run_in_netns(int fd, const std::function<base::result<void>()>& work) {
  std::optional<base::result<void>> out;
  std::thread helper([&] {
    if (::setns(fd, CLONE_NEWNET) != 0) {
      out = fail<void>("enter network namespace: " + base::errno_text());
      return;
    }
    out = work();
  });
  helper.join();
  return std::move(*out);
}

}  // namespace airlock::launcher
