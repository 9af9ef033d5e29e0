#pragma once
// The embedded mode of `airlock run`: the daemon inside the launcher's own process, behind
// the same session interface as the control API's client.
#include "control/session_api.hpp"

#include <boost/asio/ip/address.hpp>

#include <filesystem>
#include <memory>
#include <optional>
#include <string>

namespace airlock::daemon {

// A daemon inside this process, for one sandbox when no daemon runs: the proxy and DNS
// listeners bind `listen_address` (the gateway side of the sandbox's veth, never a
// wildcard) on ports the kernel picks, two for the proxy (the second is `https`); no
// admin or control listener. It runs on its own thread until the returned object is
// destroyed, which drains and logs like a shutdown.
struct embedded_options {
  std::optional<std::filesystem::path> config_path;  // none: the embedded default policy
  std::string decisions_log;                         // empty: the config's, else the default path
  boost::asio::ip::address listen_address;
};
control::result<std::unique_ptr<control::session_api>> start_embedded(const embedded_options& options);

}  // namespace airlock::daemon
