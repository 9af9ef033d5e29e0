#pragma once
// One running airlock: the policy, the decision log, the session registry and metrics,
// and every listener (proxy, DNS, admin, control) on the main event loop, plus one more
// loop per further thread (`threads:`) with its own SO_REUSEPORT proxy sockets. `airlock daemon`
// runs one on the main thread with signal handling; `airlock run` without a daemon runs
// one on a thread of its own (start_embedded). What the instance owns and changes is
// touched on the main loop only; other threads go through call(), except for ports(), which
// reads only what create() set before the loops started.
#include "control/session_api.hpp"
#include "daemon/session_registry.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/post.hpp>

#include <filesystem>
#include <future>
#include <memory>
#include <optional>
#include <string>

namespace airlock::daemon {

struct instance_options {
  std::optional<std::filesystem::path> config_path;  // none: the embedded default policy
  std::optional<std::string> decisions_log;          // overrides log.decisions
  // Embedded: proxy (two ports, the second for :443) and DNS on this address with
  // kernel-picked ports, instead of the config's listen: section; no admin or control listener.
  std::optional<boost::asio::ip::address> embedded_listen;
};

struct startup_error {
  int exit_code = 1;  // 2: the configuration is wrong; 1: a listener or the log failed
  std::string message;
};

class instance {
 public:
  static boost::system::result<std::unique_ptr<instance>, startup_error> create(const instance_options& options);
  ~instance();

  // Runs the loop on the calling thread until stopped.
  void run();
  // Handles SIGINT/SIGTERM (drain, then stop) and SIGHUP (reload, reopen the log).
  void handle_signals();
  // Thread-safe: closes the listeners, gives open connections up to 5 s, closes every
  // session with its totals, stops the loop.
  void request_stop();

  // Runs f on the loop and waits for its result (from any other thread).
  template <typename F>
  auto call(F f) -> decltype(f()) {
    std::packaged_task<decltype(f())()> task(std::move(f));
    auto done = task.get_future();
    boost::asio::post(io(), [&task] { task(); });
    return done.get();
  }

  session_registry& registry();
  control::listener_ports ports() const;
  const std::string& ready_line() const;

  struct parts;  // everything it owns; defined in instance_parts.hpp

 private:
  explicit instance(std::unique_ptr<parts> p);
  boost::asio::io_context& io();
  std::unique_ptr<parts> parts_;
};

}  // namespace airlock::daemon
