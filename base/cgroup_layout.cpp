#include "base/cgroup_layout.hpp"

#include <map>
#include <sstream>

namespace airlock::base {

cgroup_layout read_cgroup_layout(std::string_view mountinfo, std::string_view own_cgroups,
                                 const std::function<std::string(const std::filesystem::path&)>& read) {
  namespace fs = std::filesystem;
  cgroup_layout l;
  // /proc/self/cgroup: "0::/path" (v2) and "N:memory:/path" or "N:cpu,cpuacct:/path" (v1).
  std::map<std::string, std::string> own;  // controller -> path
  {
    std::istringstream in{std::string(own_cgroups)};
    std::string line;
    while (std::getline(in, line)) {
      const auto a = line.find(':'), b = line.find(':', a + 1);
      if (a == std::string::npos || b == std::string::npos) continue;
      if (line.compare(0, a, "0") == 0 && b == a + 1) {
        if (line.compare(b + 1, 1, "/") == 0) l.v2_own = line.substr(b + 1);
        continue;
      }
      std::istringstream names(line.substr(a + 1, b - a - 1));
      std::string n;
      while (std::getline(names, n, ',')) own[n] = line.substr(b + 1);
    }
  }
  // /proc/self/mountinfo: "ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS ... - FSTYPE SOURCE SUPEROPTS".
  std::istringstream in{std::string(mountinfo)};
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream f(line);
    std::string id, parent, dev, root, point;
    f >> id >> parent >> dev >> root >> point;
    const auto dash = line.find(" - ");
    if (dash == std::string::npos) continue;
    std::istringstream tail(line.substr(dash + 3));
    std::string type, source, super;
    tail >> type >> source >> super;
    if (type == "cgroup2" && l.v2_mount.empty()) {
      l.v2_mount = point;
      l.v2_controllers = read(fs::path(point) / "cgroup.controllers");
    } else if (type == "cgroup") {
      std::istringstream opts(super);
      std::string o;
      while (std::getline(opts, o, ',')) {
        std::optional<cgroup_layout::v1>* slot = o == "memory" ? &l.memory
                                                 : o == "pids" ? &l.pids
                                                 : o == "cpu"  ? &l.cpu
                                                               : nullptr;
        if (slot == nullptr || *slot || !own.contains(o)) continue;
        std::string path = own[o];
        if (root != "/" && path.starts_with(root)) path = path.substr(root.size());
        *slot = cgroup_layout::v1{point, fs::path(point) / fs::path(path).relative_path()};
      }
    }
  }
  return l;
}

}  // namespace airlock::base
