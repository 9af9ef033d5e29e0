#pragma once
// Small files the daemon keeps for itself. Writing: only its owner may read the file, and it
// is replaced whole: written to a temporary file beside it (mode 0600 from its creation),
// flushed to disk, then renamed over the old one, so a reader, or a daemon started after a
// crash, finds the old text or the new, never half.
#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>

namespace airlock::base {

// Empty on success, else what failed ("cannot write PATH: REASON").
std::string write_private_file(const std::filesystem::path& path, std::string_view text);

// Reads a whole file of at most `limit` bytes into `out`; empty on success, else what failed.
std::string read_small_file(const std::filesystem::path& path, std::string& out, std::size_t limit = 1 << 20);

}  // namespace airlock::base
