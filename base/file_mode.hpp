#pragma once
// A file's permission bits, for the files only their owner may read (the CA's key, a secret
// a credential adds) and for the messages about them.
#include <sys/stat.h>

#include <cstdio>
#include <string>

namespace airlock::base {

// Whether group and others have no permission at all on the file (no bit of 077): what a key
// or a secret file must hold before airlock reads it. Give it what fstat said of the open
// descriptor, so the file checked is the file read.
inline bool is_private(const struct stat& st) noexcept { return (st.st_mode & 077) == 0; }

// The permission bits as chmod takes them: "0640".
inline std::string octal_mode(mode_t mode) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "%04o", static_cast<unsigned>(mode & 07777));
  return buf;
}

}  // namespace airlock::base
