#include "launcher/sandbox.hpp"

#include "launcher/env_filter.hpp"
#include "launcher/host_view.hpp"
#include "launcher/netns.hpp"
#include "launcher/sandbox_parts.hpp"
#include "policy/units.hpp"

#include <sys/signalfd.h>
#include <unistd.h>

#include <cstdio>
#include <future>
#include <system_error>

namespace airlock::launcher {
namespace {

// Runs `f` on a helper thread (or, should no thread be available, when asked for the
// result). The future's destructor waits, so an early return never leaves it running.
template <typename F>
auto in_parallel(F f) {
  try {
    return std::async(std::launch::async, f);
  } catch (const std::system_error&) {
    return std::async(std::launch::deferred, f);
  }
}

}  // namespace

void say(const std::string& line) { std::fprintf(stderr, "airlock: %s\n", line.c_str()); }

int sandbox::run(const daemon_source& daemons) {
  const auto started = clock::now();
  auto sig = take_signals();
  if (!sig) return refuse("signals", sig.error());
  signals_ = std::move(*sig);

  parent_env_ = o_.caller ? o_.caller->env : current_environment();
  auto env = filter_environment(parent_env_, {o_.env, {}});
  if (!env) return refuse("environment", env.error());
  std::string path_var(default_path);
  for (const auto& e : *env)
    if (e.starts_with("PATH=")) path_var = e.substr(5);
  if (o_.command.empty()) return refuse("command", "no CMD given after --");
  if (auto cmd = find_command(o_.command.front(), path_var); !cmd) {
    say(cmd.error().message);
    return cmd.error().exit_status;
  }
  if (auto r = plan_filesystem(); !r) return refuse("filesystem", r.error());
  mark("checks");

  auto pool = address_pool::parse(o_.pool);
  if (!pool) return refuse("address pool", pool.error());
  sandbox_record wanted;
  wanted.gateway_netns = netns_identity();
  auto reserved = store_.reserve(*pool, wanted);
  if (!reserved) return refuse("address pool", reserved.error());
  record_ = *reserved;
  gateway_ = boost::asio::ip::make_address_v4(record_->gateway_ip);
  sandbox_ip_ = boost::asio::ip::make_address_v4(record_->sandbox_ip);
  mark("address");

  if (auto r = make_cgroups(); !r) return refuse("cgroup", r.error());
  mark("cgroups");
  if (auto r = make_copy(); !r) return refuse("working directory copy", r.error());
  {
    // The namespace and a running daemon's answer do not depend on each other: the
    // namespace is made on a helper thread meanwhile.
    auto network = in_parallel([this] { return make_network(); });
    auto asked = ask_running_daemon(daemons);
    if (auto r = network.get(); !r) return refuse("network", r.error());
    if (!asked) return refuse("daemon", asked.error());
  }
  mark("netns+veth, daemon");
  if (auto r = reach_daemon(daemons); !r) return refuse("daemon", r.error());
  mark("daemon checks");
  if (auto r = stage_inspection_ca(); !r) return refuse("inspection CA", r.error());
  if (ca_file_) mark("inspection CA");
  {
    // Nor do the gateway's table and the session.
    auto rules = in_parallel([this] { return install_rules(); });
    auto session = register_session();
    if (auto r = rules.get(); !r) return refuse("nftables", r.error());
    if (!session) return refuse("session", session.error());
  }
  mark("nft, session");
  if (auto s = pending_signal()) {
    say("interrupted before CMD started");
    return 128 + *s;
  }
  if (auto r = start_child(); !r) return refuse("bubblewrap", r.error());
  mark("spawn");
  say("session " + session_ + " started (sandbox " + record_->sandbox_ip + ", " + daemon_.description + ")");

  supervise_options so;
  so.signal_fd = signals_.get();
  so.status_fd = status_read_.get();
  so.timeout = o_.timeout;
  const auto outcome = supervise(child_, so);
  child_ = 0;
  mark("CMD");

  int status = 0;
  if (outcome.timed_out) status = exit_timed_out;
  else if (outcome.cmd_status) status = *outcome.cmd_status;
  else if (outcome.signal_received) status = 128 + *outcome.signal_received;
  else status = exit_setup_failed;  // bwrap gave up before CMD ran; it said why above
  summarize(outcome, status, clock::now() - started);
  mark("summary");
  teardown();
  if (timings_) {
    // AIRLOCK_TIMINGS=1: where a run's time goes (bench/run -s startup reads it).
    std::string line = "timings:";
    auto at = started;
    for (const auto& [what, when] : marks_) {
      char buf[64];
      std::snprintf(buf, sizeof buf, " %s %.2f ms,", what,
                    std::chrono::duration<double, std::milli>(when - at).count());
      line += buf;
      at = when;
    }
    line.pop_back();
    say(line);
  }
  return status;
}

std::optional<int> sandbox::pending_signal() {
  signalfd_siginfo si{};
  std::optional<int> got;
  while (::read(signals_.get(), &si, sizeof si) == static_cast<ssize_t>(sizeof si))
    if (si.ssi_signo != SIGCHLD && !got) got = static_cast<int>(si.ssi_signo);
  return got;
}

void sandbox::summarize(const child_outcome& outcome, int status, clock::duration took) {
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(took).count();
  char after[48];
  std::snprintf(after, sizeof after, "ended after %.1fs: ", static_cast<double>(ms) / 1000.0);
  std::string how = after;
  if (outcome.timed_out) how += "timed out (--timeout " + policy::format_duration(*o_.timeout) + "), ";
  else if (auto hit = cgroup_ ? cgroup_->limit_hit() : std::nullopt) how += "stopped by the " + *hit + ", ";
  else if (!outcome.cmd_status && !outcome.signal_received) how += "CMD did not start (bwrap said why above), ";
  how += "exit " + std::to_string(status);

  std::string counts;
  if (daemon_.api) {
    auto totals = daemon_.api->remove_session(session_);
    session_.clear();
    if (totals)
      counts = "; " + std::to_string(totals->connections_allowed) + " connections allowed, " +
               std::to_string(totals->connections_denied) + " denied, " + std::to_string(totals->dns_queries) +
               " DNS queries";
    else counts = "; totals unavailable (" + totals.error() + ")";
  }
  say("session " + record_->session + " " + how + counts + "; details: airlock explain " + record_->session);
}

int run_sandbox(const run_options& options, const daemon_source& daemons) {
  sandbox s(options);
  return s.run(daemons);
}

}  // namespace airlock::launcher
