#pragma once
// A small rtnetlink client: veth pairs, links up, IPv4 addresses and routes. One socket
// lives in one network namespace (the one current when it was opened), so the launcher
// holds one for the gateway side and one for the sandbox side. Every request waits for
// the kernel's acknowledgement: a step either happened or returns the kernel's reason.
#include "base/result.hpp"
#include "base/unique_fd.hpp"

#include <boost/asio/ip/address_v4.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace airlock::launcher {

struct ipv4_route {
  boost::asio::ip::address_v4 destination;  // 0.0.0.0 with prefix 0: the default route
  std::uint8_t prefix = 0;
  boost::asio::ip::address_v4 gateway;  // 0.0.0.0: on-link
  int oif = 0;
  std::uint32_t table = 254;  // RT_TABLE_MAIN
};

class rtnetlink {
 public:
  // A NETLINK_ROUTE socket in the calling thread's network namespace.
  static base::result<rtnetlink> open();

  // A veth pair: `name` here, `peer` created directly inside the namespace `peer_netns_fd`.
  base::result<void> create_veth(const std::string& name, const std::string& peer, int peer_netns_fd);
  base::result<int> link_index(const std::string& name);
  base::result<void> link_up(int index);
  // true when it existed and is gone now, false when there was no such link.
  base::result<bool> delete_link(const std::string& name);
  base::result<void> add_address(int index, boost::asio::ip::address_v4 address, std::uint8_t prefix);
  // Removes an address (and the prefix route it brought); fine when it is already gone.
  base::result<void> delete_address(int index, boost::asio::ip::address_v4 address, std::uint8_t prefix);
  base::result<void> add_route(const ipv4_route& route);
  base::result<void> delete_route(const ipv4_route& route);
  // IPv4 default routes of the main table.
  base::result<std::vector<ipv4_route>> default_routes();

 private:
  explicit rtnetlink(base::unique_fd fd) : fd_(std::move(fd)) {}
  // Sends one request and returns 0 or the kernel's errno.
  base::result<int> transact(std::vector<char>& message);
  base::unique_fd fd_;
  std::uint32_t seq_ = 1;
};

}  // namespace airlock::launcher
