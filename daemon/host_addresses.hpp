#pragma once
// airlock's own addresses as the host has them: every address on the interfaces of the
// network namespace the daemon runs in, read at start and again whenever the kernel says
// one was added or removed (rtnetlink's address groups). What they feed is
// policy/own_addresses.hpp: a sandbox must not reach the gateway's own services.
#include "policy/cidr.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>

#include <functional>
#include <string>
#include <vector>

namespace airlock::daemon {

// Every interface address of this namespace (loopback's too), as host prefixes; empty with
// `error` set when they cannot be read.
std::vector<policy::cidr> read_host_addresses(std::string* error = nullptr);

// Calls `changed` on `ex` after each burst of address changes the kernel reports. Without
// an rtnetlink socket (a sandboxed build host), `start` says why and nothing is watched:
// the addresses read at start stand.
class host_address_watch {
 public:
  host_address_watch(boost::asio::any_io_executor ex, std::function<void()> changed);
  std::string start();
  void stop();

 private:
  void arm();
  boost::asio::posix::stream_descriptor socket_;
  std::function<void()> changed_;
};

}  // namespace airlock::daemon
