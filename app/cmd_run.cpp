// `airlock run`: reads the options, then one of three ways. As root: picks the daemon (the one
// on --control, else an embedded one) and hands over to launcher::run_sandbox. Without root:
// asks the daemon's sandbox socket to do that for the caller (control/sandbox_call.hpp). As
// the daemon's helper (`--order-fd FD`, the only argument): the same as root, for the user
// the order names, with that user's arguments, environment and descriptors.
#include "app/cli.hpp"
#include "app/launcher_flags.hpp"
#include "base/errno_text.hpp"
#include "base/result.hpp"
#include "base/small_file.hpp"
#include "base/unique_fd.hpp"
#include "control/sandbox_call.hpp"
#include "control/sandbox_client.hpp"
#include "control/session_api.hpp"
#include "daemon/embedded.hpp"
#include "launcher/sandbox.hpp"
#include "policy/units.hpp"

#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <string_view>
#include <vector>

extern char** environ;

namespace airlock::app {
namespace {

void say(const std::string& line) { std::fprintf(stderr, "airlock: %s\n", line.c_str()); }

// What a sandbox made for a caller may show: the working directory and every --ro/--rw path,
// opened (O_PATH) with this process's own rights, in that order. The working directory even
// with --no-cwd (the layout has its place; "/" when "." cannot be opened).
base::result<std::vector<base::unique_fd>> open_shared_paths(const launcher::run_options& o) {
  std::vector<base::unique_fd> opened;
  opened.emplace_back(::open(".", O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!opened.back()) opened.back().reset(::open("/", O_PATH | O_DIRECTORY | O_CLOEXEC));
  for (const auto* list : {&o.ro, &o.rw})
    for (const auto& p : *list) {
      opened.emplace_back(::open(p.c_str(), O_PATH | O_CLOEXEC));
      if (!opened.back())
        return base::fail<std::vector<base::unique_fd>>((list == &o.ro ? "--ro " : "--rw ") + p.string() + ": " +
                                                        base::errno_text());
    }
  if (opened.size() - 1 > control::max_call_paths)
    return base::fail<std::vector<base::unique_fd>>("at most " + std::to_string(control::max_call_paths) +
                                                    " --ro/--rw paths for a sandbox made for another user");
  return opened;
}

std::uint32_t current_umask() {
  const auto mask = ::umask(022);
  ::umask(mask);
  return mask;
}

// Without root: the daemon makes the sandbox. The caller opens what it shares, so the daemon
// shows the sandbox nothing the caller could not reach.
int run_through_daemon(const std::string& socket, args a, const launcher::run_options& o) {
  auto opened = open_shared_paths(o);
  if (!opened) {
    say(opened.error() + "; CMD was not started");
    return launcher::exit_setup_failed;
  }
  control::sandbox_call call;
  for (auto s : a) call.args.emplace_back(s);
  for (char** e = environ; *e != nullptr; ++e) call.env.emplace_back(*e);
  call.paths = opened->size() - 1;
  call.umask = current_umask();
  std::vector<int> fds{0, 1, 2};
  for (const auto& f : *opened) fds.push_back(f.get());
  auto status = control::call_sandbox(socket, call, fds);
  if (!status) {
    say(status.error());
    return launcher::exit_setup_failed;
  }
  return *status;
}

// Under sudo, CMD runs as the user who called sudo, not as root: what it writes in the working
// directory is theirs, as through the daemon. The paths are opened here with root's rights:
// this caller has them.
base::result<launcher::caller_identity> sudo_caller(const launcher::run_options& o,
                                                    std::vector<base::unique_fd>& held) {
  const char* uid_text = std::getenv("SUDO_UID");
  std::uint32_t uid = 0;
  const std::string_view text = uid_text;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), uid);
  if (ec != std::errc{} || end != text.data() + text.size())
    return base::fail<launcher::caller_identity>("SUDO_UID is not a number");
  const passwd* pw = ::getpwuid(uid);
  if (pw == nullptr)
    return base::fail<launcher::caller_identity>("SUDO_UID " + std::string(text) + " has no passwd entry");
  launcher::caller_identity c;
  c.uid = uid;
  c.gid = pw->pw_gid;
  c.user = pw->pw_name;
  int count = 64;
  std::vector<gid_t> groups(static_cast<std::size_t>(count));
  if (::getgrouplist(pw->pw_name, pw->pw_gid, groups.data(), &count) < 0) {
    groups.resize(static_cast<std::size_t>(count));
    ::getgrouplist(pw->pw_name, pw->pw_gid, groups.data(), &count);
  }
  groups.resize(static_cast<std::size_t>(std::max(count, 0)));
  c.groups.assign(groups.begin(), groups.end());
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string_view v = *e;
    if (!v.starts_with("HOME=") && !v.starts_with("USER=") && !v.starts_with("LOGNAME=")) c.env.emplace_back(v);
  }
  c.env.push_back(std::string("HOME=") + pw->pw_dir);
  c.env.push_back(std::string("USER=") + pw->pw_name);
  c.env.push_back(std::string("LOGNAME=") + pw->pw_name);
  c.umask = current_umask();
  auto opened = open_shared_paths(o);
  if (!opened) return base::fail<launcher::caller_identity>(opened.error());
  held = std::move(*opened);
  c.cwd_fd = held.front().get();
  for (std::size_t i = 1; i < held.size(); ++i) c.path_fds.push_back(held[i].get());
  return c;
}

int run_with(args a, const control::sandbox_order* order) {
  arg_reader r("run", a);
  launcher::run_options o;
  const auto config = r.value("-c", "--config");
  const auto log = r.value("", "--log");
  const auto control_flag = r.value("", "--control");
  const auto state_flag = r.value("", "--state-dir");
  const auto pool_flag = r.value("", "--pool");
  const auto sandbox_socket = r.value("", "--sandbox-socket").value_or(std::string(control::default_sandbox_socket));
  const std::string control = order ? order->control : control_flag.value_or(std::string(default_control_socket));
  if (auto v = r.value("", "--policy")) o.policy = *v;
  if (auto v = r.value("", "--session")) o.session_id = *v;
  o.allow = r.values("--allow");
  o.state_dir = state_flag.value_or(std::string(launcher::default_state_dir));
  o.labels = r.key_values("--label");
  for (const auto& d : r.values("--ro")) o.ro.emplace_back(d);
  for (const auto& d : r.values("--rw")) o.rw.emplace_back(d);
  const bool ro_cwd = r.flag("--ro-cwd"), copy_cwd = r.flag("--copy-cwd"), no_cwd = r.flag("--no-cwd");
  if (static_cast<int>(ro_cwd) + static_cast<int>(copy_cwd) + static_cast<int>(no_cwd) > 1)
    r.fail("--ro-cwd, --copy-cwd and --no-cwd exclude each other");
  o.cwd = ro_cwd     ? launcher::cwd_mode::read_only
          : copy_cwd ? launcher::cwd_mode::copy
          : no_cwd   ? launcher::cwd_mode::none
                     : launcher::cwd_mode::read_write;
  auto quantity = [&](std::string_view flag, auto parse, auto& out) {
    if (auto v = r.value("", flag)) {
      auto p = parse(*v);
      if (p) out = *p;
      else r.fail(std::string(flag) + " " + p.error());
    }
  };
  quantity("--memory", policy::parse_size, o.limits.memory_bytes);
  quantity(
      "--pids", [](std::string_view t) { return policy::parse_count(t, 8, 4194304); }, o.limits.pids);
  quantity("--cpus", policy::parse_cpus, o.limits.cpus);
  quantity("--timeout", policy::parse_duration, o.timeout);
  o.env = r.values("--env");
  if (pool_flag) o.pool = *pool_flag;
  if (r.flag("--keep-env"))
    r.fail("--keep-env is not offered (it would hand every secret to CMD); name each variable with --env VAR");
  o.command = r.positionals();
  if (!r.failed() && o.command.empty()) r.fail("no command: airlock run [OPTIONS] -- CMD [ARG...]");
  if (order) {
    // The daemon's helper acts for a caller with airlock's privileges: what would point
    // them elsewhere than the daemon's own settings is refused.
    for (auto [given, flag] : {std::pair{config.has_value(), "-c"},
                               {log.has_value(), "--log"},
                               {control_flag.has_value(), "--control"},
                               {state_flag.has_value(), "--state-dir"},
                               {pool_flag.has_value(), "--pool"},
                               {copy_cwd, "--copy-cwd"}})
      if (given)
        r.fail(std::string(flag) + " is root's alone; through the daemon its settings apply (run without " + flag +
               ", or as root)");
  }
  if (r.failed()) {
    r.usage_error();
    return launcher::exit_setup_failed;  // CMD's statuses are ours to pass on: 2 could be CMD's
  }
  if (!order && ::geteuid() != 0) return run_through_daemon(sandbox_socket, a, o);

  if (order) {
    launcher::caller_identity c;
    c.uid = order->uid;
    c.gid = order->gid;
    c.groups = order->groups;
    c.user = order->user;
    c.env = order->call.env;
    c.umask = order->call.umask;
    c.cwd_fd = order->first_fd;
    for (std::size_t i = 0; i < order->call.paths; ++i) c.path_fds.push_back(order->first_fd + 1 + static_cast<int>(i));
    o.caller = std::move(c);
    if (!order->state_dir.empty()) o.state_dir = order->state_dir;
    if (!order->pool.empty()) o.pool = order->pool;
  }
  std::vector<base::unique_fd> held;  // the sudo caller's paths, open while the run lasts
  if (!order && std::getenv("SUDO_UID") != nullptr && std::string_view(std::getenv("SUDO_UID")) != "0") {
    auto c = sudo_caller(o, held);
    if (!c) {
      say(c.error() + "; CMD was not started");
      return launcher::exit_setup_failed;
    }
    o.caller = std::move(*c);
  }
  launcher::daemon_source daemons;
  daemons.running = [&]() -> std::optional<launcher::daemon_link> {
    auto client = control::connect_control(control);
    if (!client) {
      if (order) return std::nullopt;  // the helper never starts a daemon of its own
      std::fprintf(stderr, "airlock: %s; starting an embedded daemon for this sandbox\n", client.error().c_str());
      return std::nullopt;
    }
    if (config)
      std::fprintf(stderr, "airlock: using the daemon at %s; -c %s applies to embedded runs only\n", control.c_str(),
                   config->c_str());
    return launcher::daemon_link{std::move(*client), "the daemon at " + control, control};
  };
  daemons.embedded = [&](const boost::asio::ip::address_v4& gateway) -> base::result<launcher::daemon_link> {
    if (order) return base::fail<launcher::daemon_link>("the daemon's control socket " + control + " did not answer");
    daemon::embedded_options eo;
    if (config) eo.config_path = *config;
    if (log) eo.decisions_log = *log;
    eo.listen_address = gateway;
    auto embedded = daemon::start_embedded(eo);
    if (!embedded) return "start an embedded daemon: " + embedded.error();
    return launcher::daemon_link{std::move(*embedded), "an embedded daemon", ""};
  };
  return launcher::run_sandbox(o, daemons);
}

// The daemon's helper: the order is on descriptor FD (a sealed memfd the daemon wrote).
int run_for_caller(std::string_view fd_text) {
  int fd = -1;
  auto [end, ec] = std::from_chars(fd_text.data(), fd_text.data() + fd_text.size(), fd);
  if (ec != std::errc{} || end != fd_text.data() + fd_text.size() || fd < 3) {
    say("--order-fd takes a descriptor number from 3 up; it is how the daemon starts airlock run for a caller");
    return launcher::exit_setup_failed;
  }
  if (::geteuid() != 0) {
    say("--order-fd is the daemon's, which runs as root");
    return launcher::exit_setup_failed;
  }
  base::unique_fd held(fd);
  auto text = base::read_file(held.get(), control::max_call_bytes * 2);
  held.reset();
  if (!text) {
    say("read the daemon's order: " + text.error());
    return launcher::exit_setup_failed;
  }
  auto order = control::decode_order(*text);
  if (!order) {
    say("the daemon's order: " + order.error());
    return launcher::exit_setup_failed;
  }
  std::vector<std::string_view> caller_args(order->call.args.begin(), order->call.args.end());
  return run_with(caller_args, &*order);
}

}  // namespace

int run_run_command(args a) {
  // The daemon's helper takes its orders on a descriptor, never on the command line (which
  // `ps` shows, and which the caller would otherwise write).
  if (a.size() == 2 && a[0] == "--order-fd") return run_for_caller(a[1]);
  return run_with(a, nullptr);
}

}  // namespace airlock::app
