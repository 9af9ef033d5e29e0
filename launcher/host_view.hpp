#pragma once
// What the sandbox's filesystem is made of, read from the host: which system directories
// exist (and which are merged-/usr symlinks), which secret files in /etc to cover, where
// /etc/resolv.conf really lives, where CMD is; and the disposable copy for --copy-cwd.
#include "base/result.hpp"
#include "launcher/bwrap_args.hpp"

#include <boost/system/result.hpp>

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace airlock::launcher {

// /usr, /bin, /sbin, /lib, /lib32, /lib64, /libx32, /etc, /opt as far as they exist.
std::vector<system_entry> system_entries();

// Files in /etc a workload never needs and the caller could read (root: all of them):
// shadow passwords, sudoers, SSH host keys. Covered with /dev/null.
std::vector<std::filesystem::path> masked_files();

// The path /etc/resolv.conf resolves to (following symlinks, e.g. into /run/systemd),
// which is where the sandbox's own resolv.conf must be placed.
base::result<std::filesystem::path> resolv_conf_target();

// CMD as execve will find it with `path_var`: errors say "command not found" (exit 127)
// or "not executable" (exit 126) in `not_found`.
struct command_error {
  int exit_status;
  std::string message;
};
boost::system::result<std::filesystem::path, command_error> find_command(const std::string& cmd,
                                                                         const std::string& path_var);

// The host's bundle of trusted roots (what OpenSSL, curl and Python read by default): the
// first of the distributions' usual places that is a readable file, or an empty path.
std::filesystem::path system_ca_bundle();

// What SSL_CERT_FILE, REQUESTS_CA_BUNDLE, GIT_SSL_CAINFO and CURL_CA_BUNDLE name when
// inspection is on: those variables replace the store (they do not add to it), so the file
// holds the system roots first and airlock's CA after them, each on lines of its own.
std::string ca_bundle(std::string_view system_roots, std::string_view airlock_ca);

// True when `pem` holds at least one PEM certificate block.
bool has_pem_certificate(std::string_view pem);

// Copies a directory tree (files, directories, symlinks; modes and modification times),
// for --copy-cwd.
base::result<void> copy_tree(const std::filesystem::path& from, const std::filesystem::path& to);

}  // namespace airlock::launcher
