#pragma once
// Streams a decision log and keeps one session's lines. A line is parsed in full only
// when it names the session (`"session":"ID"`, spelled as the log writer spells it) or is
// a `log_dropped` line, so a million-line log takes seconds and memory stays at the
// session's size.
#include "base/result.hpp"
#include "record/event.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace airlock::record {

struct session_log {
  std::string session;
  std::string path;           // the file read, for messages
  std::vector<event> events;  // the session's lines, in log order
  std::size_t lines = 0;      // lines read in all
  // Lines skipped because they are not JSON objects: any line that does not look like
  // `{...}`, and lines naming the session that do not parse.
  std::size_t unparseable = 0;
  // Lines the writer reported lost (`log_dropped`) between the session's first and
  // last line: the story may be missing that many lines (of any session).
  std::uint64_t dropped = 0;
};

// Feeds lines one at a time; pure, for tests and for any reader.
class session_filter {
 public:
  explicit session_filter(std::string session);
  void feed(std::string_view line);  // one line without its newline
  void feed_unreadable();            // a line too long to look at: counted as unparseable
  session_log finish() &&;

 private:
  session_log out_;
  std::string needle_;  // "session":"ID" as the writer escapes it
  std::uint64_t pending_dropped_ = 0;
};

// Reads `path` ("-" for stdin) through session_filter. The error is a message that names
// the file (cannot open, read error).
base::result<session_log> read_session(const std::string& path, std::string_view session);

}  // namespace airlock::record
