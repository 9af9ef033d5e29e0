// A NETLINK_SOCK_DIAG socket and the one question attribution asks it: which socket inode has
// this key. A netlink socket answers for the network namespace it was created in, whatever
// namespace the thread using it is in later: open it inside the sandbox's namespace, keep it.
#pragma once

#include "attribution/socket_key.hpp"
#include "base/unique_fd.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace airlock::attribution {

struct diag_answer {
  enum class kind : std::uint8_t { found, not_found, failed } what = kind::failed;
  std::uint32_t inode = 0;  // found: 0 when no file holds the socket any more
  int error = 0;            // failed: errno (ETIMEDOUT when the kernel did not answer in time)
};

class diag_socket {
 public:
  // A socket in the calling thread's network namespace. Check valid(); error() says why not.
  explicit diag_socket(std::chrono::milliseconds timeout = std::chrono::milliseconds(250));

  bool valid() const noexcept { return static_cast<bool>(fd_); }
  int error() const noexcept { return open_error_; }

  // The socket with `key`. TCP: the exact 4-tuple. UDP: the kernel's receive lookup (an
  // unconnected socket matches any remote), then, when that fails, every UDP socket on the
  // local port (a connected socket whose remote airlock saw differently, or an IPv6
  // dual-stack socket talking IPv4).
  diag_answer find(const socket_key& key);

 private:
  struct exchange_result;
  exchange_result exchange(const std::vector<std::byte>& request, std::uint32_t seq);
  diag_answer find_udp_by_port(const socket_key& key);

  base::unique_fd fd_;
  int open_error_ = 0;
  // A dump arrives in several datagrams of at most a few pages each; 64 KiB holds any of them.
  std::vector<std::byte> buffer_ = std::vector<std::byte>(64 * 1024);
  std::uint32_t seq_ = 0;
};

}  // namespace airlock::attribution
