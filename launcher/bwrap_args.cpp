#include "launcher/bwrap_args.hpp"

namespace airlock::launcher {

std::vector<std::string> bwrap_argv(const sandbox_spec& spec) {
  std::vector<std::string> a{spec.bwrap.string()};
  auto add = [&](std::initializer_list<std::string> words) { a.insert(a.end(), words); };

  // Namespaces and process: the network namespace is the one airlock made and the child
  // entered before exec'ing bwrap, so no --unshare-net here.
  add({"--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try"});
  add({"--hostname", spec.hostname});
  add({"--die-with-parent", "--new-session", "--cap-drop", "ALL"});
  if (spec.status_fd >= 0) add({"--json-status-fd", std::to_string(spec.status_fd)});

  for (const auto& e : spec.system) {
    if (e.symlink_target) add({"--symlink", e.symlink_target->string(), e.path.string()});
    else add({"--ro-bind", e.path.string(), e.path.string()});
  }
  add({"--dev", "/dev", "--proc", "/proc"});
  add({"--tmpfs", "/tmp", "--tmpfs", "/var/tmp", "--tmpfs", "/run"});
  if (!spec.home.empty()) add({"--tmpfs", spec.home.string()});
  auto bind = [&](const bind_entry& b) {
    add({b.writable ? "--bind" : "--ro-bind", b.source.string(), b.target.string()});
  };
  if (spec.workdir) bind(*spec.workdir);
  for (const auto& b : spec.binds) bind(b);
  for (const auto& f : spec.files) add({"--ro-bind-data", std::to_string(f.fd), f.target.string()});
  for (const auto& m : spec.masked) add({"--ro-bind", "/dev/null", m.string()});
  if (!spec.chdir.empty()) add({"--chdir", spec.chdir.string()});

  a.emplace_back("--");
  a.insert(a.end(), spec.command.begin(), spec.command.end());
  return a;
}

}  // namespace airlock::launcher
