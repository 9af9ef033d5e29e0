#pragma once
// Files read whole, and the small files the daemon keeps for itself.
//
// Reading: every whole-file read in airlock goes through read_file, bounded. Writing: only
// its owner may read the file, and it is replaced whole: written to a temporary file beside
// it (mode 0600 from its creation), flushed to disk, then renamed over the old one, so a
// reader, or a daemon started after a crash, finds the old text or the new, never half.
#include "base/result.hpp"

#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>
#include <utility>

namespace airlock::base {

// The bound on a whole-file read, unless the caller names its own. It is there for the path
// that names the wrong thing: a device (/dev/zero, /dev/urandom never end), a log still being
// written, a file grown by mistake; the read stops at the bound instead of taking the
// memory. What airlock reads whole is far below it: the largest, a configuration, a CA bundle
// and /proc/self/mountinfo on a host with many mounts, run to a few MiB at the most.
inline constexpr std::size_t read_file_limit = std::size_t{16} << 20;

// A file longer than the limit: an error, or its first `limit` bytes (a /proc file of which
// only the start is wanted, or a caller that tells "too long" in its own words by asking for
// one byte more than it allows).
enum class past_limit { fails, cut };

// The text of the file at `path`, or what failed: "cannot read PATH: REASON", with REASON
// "larger than N bytes" for a file past the limit.
result<std::string> read_file(const std::filesystem::path& path, std::size_t limit = read_file_limit,
                              past_limit past = past_limit::fails);

// The same from a descriptor the caller opened and checked (fstat: a regular file, the one it
// meant, is_private), read from where it stands; the error is REASON alone, the caller names
// the file.
result<std::string> read_file(int fd, std::size_t limit = read_file_limit, past_limit past = past_limit::fails);

// Empty on success, else what failed ("cannot write PATH: REASON").
std::string write_private_file(const std::filesystem::path& path, std::string_view text);

}  // namespace airlock::base
