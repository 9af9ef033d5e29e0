#include "base/errno_text.hpp"
#include "base/small_file.hpp"
#include "launcher/env_filter.hpp"
#include "launcher/host_view.hpp"
#include "launcher/sandbox_parts.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

namespace airlock::launcher {
namespace {

// A sealed in-memory file for bwrap's --ro-bind-data, read from its start.
base::result<base::unique_fd> memory_file(const char* name, const std::string& content) {
  base::unique_fd fd(::memfd_create(name, MFD_CLOEXEC));
  if (!fd)
    return base::result<base::unique_fd>(boost::system::in_place_error, std::string("memfd: ") + base::errno_text());
  if (::write(fd.get(), content.data(), content.size()) != static_cast<ssize_t>(content.size()) ||
      ::lseek(fd.get(), 0, SEEK_SET) != 0)
    return base::result<base::unique_fd>(boost::system::in_place_error,
                                         std::string("memfd write: ") + base::errno_text());
  return fd;
}

// A file that cannot be read reads as empty (and then holds no certificate).
std::string text_of(const fs::path& p) {
  auto text = base::read_file(p);
  return text ? std::move(*text) : std::string();
}

}  // namespace

base::result<void> sandbox::stage_inspection_ca() {
  // The daemon terminates TLS for some rule: listeners() names its CA (GET /v1/info for a
  // running daemon, the config for an embedded one). Both files CMD gets are copied into
  // memfds now, not bound from the daemon's ca_dir (which holds the key too): one snapshot
  // per run, read-only, gone with the sandbox. SSL_CERT_FILE and its kin replace a client's
  // store, so they name the system roots plus airlock's CA (hosts that are not inspected
  // still verify); Node adds NODE_EXTRA_CA_CERTS to its own store, so that one is the CA.
  if (ports_.inspection_ca.empty()) return {};
  const fs::path ca_path = ports_.inspection_ca;
  const auto ca = text_of(ca_path);
  if (!has_pem_certificate(ca))
    return "cannot read a PEM certificate in " + ca_path.string() + ", the CA " + daemon_.description +
           " inspects with (a relative ca_dir is relative to the daemon's working directory)";
  const auto roots_path = system_ca_bundle();
  if (roots_path.empty())
    say("no system CA bundle found (/etc/ssl/certs/ca-certificates.crt and the like): SSL_CERT_FILE holds "
        "airlock's CA alone, so hosts that are not inspected will not verify");
  auto ca_fd = memory_file("airlock-ca.crt", ca);
  if (!ca_fd) return ca_fd.error();
  auto bundle_fd = memory_file("airlock-bundle.crt", ca_bundle(roots_path.empty() ? "" : text_of(roots_path), ca));
  if (!bundle_fd) return bundle_fd.error();
  ca_file_ = std::move(*ca_fd);
  ca_bundle_ = std::move(*bundle_fd);
  return {};
}

base::result<void> sandbox::start_child() {
  // resolv.conf points at the gateway, where the nft table sends port 53 to airlock's DNS.
  auto resolv_target = resolv_conf_target();
  if (!resolv_target) return resolv_target.error();
  auto resolv = memory_file("resolv.conf", "nameserver " + record_->gateway_ip + "\n");
  if (!resolv) return resolv.error();

  sandbox_spec spec;
  spec.bwrap = o_.bwrap;
  spec.system = system_entries();
  spec.masked = masked_files();
  spec.home = home_;
  spec.workdir = workdir_;
  spec.chdir = workdir_ ? cwd_ : home_;
  spec.binds = binds_;
  spec.files.push_back({resolv->get(), *resolv_target});
  env_request env_req{o_.env, {{"AIRLOCK_SESSION", session_}}};
  if (ca_file_) {
    spec.files.push_back({ca_file_.get(), std::string(sandbox_ca_file)});
    spec.files.push_back({ca_bundle_.get(), std::string(sandbox_ca_bundle)});
    files_.push_back(std::move(ca_file_));
    files_.push_back(std::move(ca_bundle_));
    // npm_config_cafile too: a global npmrc's cafile (Debian images with NodeSource set one)
    // replaces Node's store, NODE_EXTRA_CA_CERTS included.
    for (const char* var :
         {"SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "GIT_SSL_CAINFO", "CURL_CA_BUNDLE", "npm_config_cafile"})
      env_req.forced.emplace_back(var, std::string(sandbox_ca_bundle));
    env_req.forced.emplace_back("NODE_EXTRA_CA_CERTS", std::string(sandbox_ca_file));
  }
  files_.push_back(std::move(*resolv));
  auto env = filter_environment(parent_env_, env_req);
  if (!env) return env.error();

  int status_pipe[2];
  if (::pipe2(status_pipe, O_CLOEXEC) != 0) return "pipe: " + base::errno_text();
  status_read_.reset(status_pipe[0]);
  status_write_.reset(status_pipe[1]);
  ::fcntl(status_read_.get(), F_SETFL, O_NONBLOCK);
  spec.status_fd = status_write_.get();
  spec.command = o_.command;

  child_spec c;
  c.executable = o_.bwrap.string();
  c.argv = bwrap_argv(spec);
  c.envp = std::move(*env);
  if (cgroup_) c.cgroup_procs = cgroup_->procs_files();
  c.netns_fd = netns_->ns.get();
  if (o_.caller) {
    c.run_as = credentials{o_.caller->uid, o_.caller->gid, {o_.caller->groups.begin(), o_.caller->groups.end()}};
    c.umask = static_cast<mode_t>(o_.caller->umask);  // what CMD creates, as the caller would
  }
  c.inherit_fds.push_back(status_write_.get());
  for (const auto& f : files_) c.inherit_fds.push_back(f.get());
  auto pid = spawn_child(c);
  if (!pid) return pid.error();
  child_ = *pid;
  status_write_.reset();  // bwrap holds it now; EOF tells us it is gone
  files_.clear();
  return {};
}

}  // namespace airlock::launcher
