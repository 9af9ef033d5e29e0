#include "launcher/host_view.hpp"

#include <unistd.h>

#include <algorithm>

namespace airlock::launcher {
namespace fs = std::filesystem;

std::vector<system_entry> system_entries() {
  std::vector<system_entry> out;
  for (const char* p : {"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt"}) {
    std::error_code ec;
    const auto st = fs::symlink_status(p, ec);
    if (ec) continue;
    if (fs::is_symlink(st)) {
      auto target = fs::read_symlink(p, ec);
      if (!ec) out.push_back({p, target});
    } else if (fs::is_directory(st)) {
      out.push_back({p, std::nullopt});
    }
  }
  return out;
}

std::vector<fs::path> masked_files() {
  std::vector<fs::path> out;
  std::error_code ec;
  // Only what the caller could read anyway needs covering (two mounts each, about 0.2 ms):
  // as root, all of them; as a user, usually none.
  auto secret = [&](const fs::path& p) {
    return fs::is_regular_file(fs::symlink_status(p, ec)) && ::access(p.c_str(), R_OK) == 0;
  };
  for (const char* p :
       {"/etc/shadow", "/etc/shadow-", "/etc/gshadow", "/etc/gshadow-", "/etc/sudoers", "/etc/security/opasswd"})
    if (secret(p)) out.emplace_back(p);
  for (const auto& e : fs::directory_iterator("/etc/ssh", ec)) {
    const auto name = e.path().filename().string();
    if (name.starts_with("ssh_host_") && name.ends_with("_key") && secret(e.path())) out.push_back(e.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

fs::path system_ca_bundle() {
  // Debian and Ubuntu; Fedora and RHEL; openSUSE; Alpine and Arch.
  for (const char* p : {"/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt",
                        "/etc/ssl/ca-bundle.pem", "/etc/ssl/cert.pem"}) {
    std::error_code ec;
    if (fs::is_regular_file(p, ec) && ::access(p, R_OK) == 0) return p;
  }
  return {};
}

std::string ca_bundle(std::string_view system_roots, std::string_view airlock_ca) {
  std::string out(system_roots);
  if (!out.empty() && out.back() != '\n') out += '\n';
  out += "# airlock's inspection CA\n";
  out += airlock_ca;
  if (!out.empty() && out.back() != '\n') out += '\n';
  return out;
}

bool has_pem_certificate(std::string_view pem) {
  const auto begin = pem.find("-----BEGIN CERTIFICATE-----");
  return begin != std::string_view::npos && pem.find("-----END CERTIFICATE-----", begin) != std::string_view::npos;
}

base::result<fs::path> resolv_conf_target() {
  // result<path, string> cannot guess which side a string is: say it.
  auto error = [](std::string m) { return base::result<fs::path>(boost::system::in_place_error, std::move(m)); };
  fs::path p = "/etc/resolv.conf";
  for (int hops = 0; hops < 16; ++hops) {
    std::error_code ec;
    const auto st = fs::symlink_status(p, ec);
    if (ec || !fs::is_symlink(st)) return base::result<fs::path>(boost::system::in_place_value, p);
    auto target = fs::read_symlink(p, ec);
    if (ec) return error("cannot read the symlink " + p.string() + ": " + ec.message());
    p = (target.is_absolute() ? target : p.parent_path() / target).lexically_normal();
  }
  return error("/etc/resolv.conf: too many symlinks");
}

boost::system::result<fs::path, command_error> find_command(const std::string& cmd, const std::string& path_var) {
  auto check = [](const fs::path& p) -> boost::system::result<fs::path, command_error> {
    std::error_code ec;
    if (!fs::exists(p, ec)) return command_error{127, p.string() + ": command not found"};
    if (fs::is_directory(p, ec) || ::access(p.c_str(), X_OK) != 0)
      return command_error{126, p.string() + ": not executable"};
    return p;
  };
  if (cmd.find('/') != std::string::npos) return check(cmd);
  std::size_t start = 0;
  std::optional<command_error> first_problem;
  while (start <= path_var.size()) {
    auto end = path_var.find(':', start);
    if (end == std::string::npos) end = path_var.size();
    const std::string dir = path_var.substr(start, end - start);
    const fs::path candidate = fs::path(dir.empty() ? "." : dir) / cmd;
    auto r = check(candidate);
    if (r) return r;
    if (r.error().exit_status == 126 && !first_problem) first_problem = r.error();
    start = end + 1;
  }
  if (first_problem) return *first_problem;
  return command_error{127, cmd + ": command not found"};
}

base::result<void> copy_tree(const fs::path& from, const fs::path& to) {
  std::error_code ec;
  fs::create_directory(to, ec);
  if (ec) return "cannot create " + to.string() + ": " + ec.message();
  fs::permissions(to, fs::status(from, ec).permissions(), ec);
  for (auto it = fs::recursive_directory_iterator(from, fs::directory_options::none, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    const auto rel = it->path().lexically_relative(from);
    const auto dst = to / rel;
    const auto st = it->symlink_status(ec);
    if (ec) break;
    if (fs::is_symlink(st)) {
      fs::copy_symlink(it->path(), dst, ec);
    } else if (fs::is_directory(st)) {
      fs::create_directory(dst, ec);
      if (!ec) fs::permissions(dst, st.permissions(), ec);
    } else if (fs::is_regular_file(st)) {
      fs::copy_file(it->path(), dst, ec);
      if (!ec) fs::last_write_time(dst, fs::last_write_time(it->path(), ec), ec);
    }  // sockets, fifos and devices are not copied
    if (ec) return "cannot copy " + it->path().string() + ": " + ec.message();
  }
  if (ec) return "cannot copy " + from.string() + ": " + ec.message();
  return {};
}

}  // namespace airlock::launcher
