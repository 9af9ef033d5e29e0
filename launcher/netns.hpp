#pragma once
// Network namespaces: a fresh one for a sandbox (loopback up, IPv6 off), pinned by a bind
// mount under /run/netns so `ip netns` and `airlock gc` can see it, and a way to run code
// inside another namespace (a helper thread enters it; the caller's thread never moves).
#include "base/result.hpp"
#include "base/unique_fd.hpp"
#include "launcher/netlink.hpp"

#include <filesystem>
#include <functional>
#include <string>

namespace airlock::launcher {

inline constexpr std::string_view netns_dir = "/run/netns";

struct sandbox_netns {
  base::unique_fd ns;  // keeps the namespace alive and is what the child enters
  rtnetlink rtnl;      // a netlink socket inside it
};

// A new network namespace with lo up and IPv6 disabled (net.ipv6.conf.{all,default}.
// disable_ipv6 = 1, so no interface inside ever gets an IPv6 address), pinned at `pin`
// (/run/netns/NAME) unless `pin` is empty.
base::result<sandbox_netns> create_netns(const std::filesystem::path& pin);

// Unmounts and removes a pin; true when there was one.
base::result<bool> remove_netns_pin(const std::filesystem::path& pin);

// Opens a namespace by path or by name under /run/netns.
base::result<base::unique_fd> open_netns(const std::string& path_or_name);

// "net:[4026531993]": the identity of a namespace (of fd, or of this thread when fd < 0).
std::string netns_identity(int fd = -1);

// Runs `work` on a helper thread that has entered the namespace `fd`; returns its result.
base::result<void> run_in_netns(int fd, const std::function<base::result<void>()>& work);

}  // namespace airlock::launcher
