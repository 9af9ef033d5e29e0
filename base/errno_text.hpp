#pragma once
// errno as text for messages ("No such file or directory"): for the code that talks to the
// kernel directly (the launcher's netlink and cgroups, the CA's files, whole-file reads).
#include <cerrno>
#include <cstring>
#include <string>

namespace airlock::base {

inline std::string errno_text(int e = errno) { return std::strerror(e); }

}  // namespace airlock::base
