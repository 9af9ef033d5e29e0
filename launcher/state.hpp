#pragma once
// What airlock made for each sandbox, written down before it is made: one small file per
// sandbox under /run/airlock/sandboxes, with the pid (and start time) of the airlock that
// owns it. Address allocation reads them under an flock, so concurrent `airlock run`s
// never get the same block; `airlock gc` removes what a dead owner left behind.
#include "base/result.hpp"
#include "launcher/address_pool.hpp"

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace airlock::launcher {

inline constexpr std::string_view default_state_dir = "/run/airlock/sandboxes";

struct sandbox_record {
  std::string id;                // 8 hex digits; names below derive from it
  std::string kind = "run";      // run | attach
  pid_t pid = 0;                 // the owner (airlock run), 0 for attach (owned by whoever detaches)
  std::uint64_t start_time = 0;  // the owner's start time (clock ticks after boot), against pid reuse
  std::string sandbox_ip, gateway_ip;
  std::string netns;          // run: the pin /run/netns/airlock-ID; attach: the namespace given
  std::string netns_id;       // attach: "net:[inode]" of that namespace, to find the record again
  std::string gateway_netns;  // "net:[inode]" of the namespace holding the veth's gateway end and the table
  std::string veth;           // gateway-side interface name
  std::string nft_table;      // inet table in the gateway namespace
  std::string guard_table;    // attach: inet table inside the attached namespace
  std::vector<std::string> cgroups;
  std::string copy_dir;                   // --copy-cwd: the disposable copy
  std::string session;                    // the daemon's session id, once registered
  std::string control;                    // the control socket it was registered with (attach)
  std::vector<std::string> saved_routes;  // attach: "GATEWAY OIF" default routes to restore on detach
};

// The record as "key=value" lines, and back (unknown keys are ignored, so an older gc
// reads a newer record).
std::string to_text(const sandbox_record& r);
base::result<sandbox_record> parse_record(const std::string& text);

// Names derived from an id: netns pin, veth (<= 15 characters) and nft table.
std::string netns_pin_for(const std::string& id);
std::string veth_for(const std::string& id);
std::string table_for(const std::string& id);
std::string guard_table_for(const std::string& id);

// A fresh random id (8 hex digits).
std::string new_sandbox_id();

// The start time of process `pid` (field 22 of /proc/PID/stat), or 0 when it is gone.
std::uint64_t process_start_time(pid_t pid);
// True when the record's owner is the same process that wrote it and still runs.
bool owner_alive(const sandbox_record& r);

class state_store {
 public:
  explicit state_store(std::filesystem::path dir = std::filesystem::path(default_state_dir)) : dir_(std::move(dir)) {}

  // Picks the first free /30 of `pool` and writes `r` (with id, addresses, names, pid
  // filled in) before returning, all under the lock.
  base::result<sandbox_record> reserve(const address_pool& pool, sandbox_record r) const;
  // Rewrites a record (atomically: write, then rename).
  base::result<void> save(const sandbox_record& r) const;
  void remove(const std::string& id) const { remove_record(id); }
  void remove_record(const std::string& id) const;
  // Every record, with the file it came from; unreadable files are reported in `errors`.
  std::vector<sandbox_record> list(std::vector<std::string>* errors = nullptr) const;
  const std::filesystem::path& dir() const { return dir_; }

 private:
  std::filesystem::path file_for(const std::string& id) const { return dir_ / (id + ".state"); }
  std::filesystem::path dir_;
};

}  // namespace airlock::launcher
