#pragma once
// Private to launcher/sandbox*.cpp: the run's state (class sandbox) and what its files
// share. One file per job:
//   sandbox.cpp           the run, top to bottom, and its summary line
//   sandbox_setup.cpp     the checks, the cgroups, the copy, the namespace and its veth,
//                         the daemon, the gateway's nft table and the session
//   sandbox_child.cpp     what CMD gets (the inspection CA, resolv.conf) and bubblewrap's start
//   sandbox_teardown.cpp  every piece taken down again, in reverse
#include "base/result.hpp"
#include "base/unique_fd.hpp"
#include "launcher/bwrap_args.hpp"
#include "launcher/cgroup.hpp"
#include "launcher/child.hpp"
#include "launcher/netlink.hpp"
#include "launcher/netns.hpp"
#include "launcher/sandbox.hpp"
#include "launcher/state.hpp"

#include <sys/types.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace airlock::launcher {
namespace fs = std::filesystem;

// One line on stderr, "airlock: LINE".
void say(const std::string& line);

class sandbox {
 public:
  using clock = std::chrono::steady_clock;

  explicit sandbox(const run_options& o) : o_(o), store_(o.state_dir) {}
  sandbox(const sandbox&) = delete;
  sandbox& operator=(const sandbox&) = delete;
  ~sandbox() { teardown(); }

  int run(const daemon_source& daemons);

 private:
  int refuse(std::string_view step, const std::string& why) {
    say(std::string(step) + ": " + why + "; CMD was not started");
    return exit_setup_failed;
  }
  base::result<void> plan_filesystem();
  base::result<void> make_cgroups();
  base::result<void> make_copy();
  base::result<void> make_network();
  base::result<void> ask_running_daemon(const daemon_source& daemons);
  base::result<void> reach_daemon(const daemon_source& daemons);
  base::result<void> stage_inspection_ca();
  base::result<void> install_rules();
  base::result<void> register_session();
  base::result<void> start_child();
  std::optional<int> pending_signal();
  void summarize(const child_outcome& outcome, int status, clock::duration took);
  void teardown();
  void mark(const char* what) {
    if (timings_) marks_.emplace_back(what, clock::now());
  }

  const run_options& o_;
  const bool timings_ = std::getenv("AIRLOCK_TIMINGS") != nullptr;
  std::vector<std::pair<const char*, clock::time_point>> marks_;
  state_store store_;
  base::unique_fd signals_;
  std::vector<std::string> parent_env_;
  fs::path home_, cwd_;
  std::optional<bind_entry> workdir_;
  std::vector<bind_entry> binds_;

  std::optional<sandbox_record> record_;
  boost::asio::ip::address_v4 gateway_, sandbox_ip_;
  std::optional<sandbox_cgroup> cgroup_;
  bool copy_made_ = false;
  std::optional<sandbox_netns> netns_;
  std::optional<rtnetlink> gateway_rtnl_;
  bool veth_made_ = false;
  int gateway_index_ = 0;
  daemon_link daemon_;
  control::listener_ports ports_;
  bool table_made_ = false;
  std::string session_;
  base::unique_fd ca_file_, ca_bundle_;  // with inspection: airlock's CA, the system roots plus it
  std::vector<base::unique_fd> files_;   // resolv.conf and CA data for bwrap
  base::unique_fd status_read_, status_write_;
  pid_t child_ = 0;
};

}  // namespace airlock::launcher
