#include "record/log_reader.hpp"

#include "base/errno_text.hpp"
#include "base/json_string.hpp"
#include "base/result.hpp"
#include "base/trim.hpp"
#include "record/decision.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

namespace airlock::record {
namespace {

constexpr std::string_view dropped_marker = "\"event\":\"log_dropped\"";
// No line airlock writes comes near this; a longer one (a binary file, a broken
// write) is skipped and counted instead of growing a buffer without bound.
constexpr std::size_t max_line = 1 << 20;

}  // namespace

session_filter::session_filter(std::string session) : needle_("\"session\":" + base::json_quote(session)) {
  out_.session = std::move(session);
}

void session_filter::feed(std::string_view raw) {
  ++out_.lines;
  const auto line = base::trim(raw);
  if (line.empty()) return;
  if (line.front() != '{' || line.back() != '}') {
    ++out_.unparseable;
    return;
  }
  if (line.find(needle_) != std::string_view::npos) {
    auto e = parse_event(line);
    if (!e || e->session != out_.session) {
      // Names the session but is not one of its lines: broken, or the id appears inside
      // another field's text (a hostile SNI can contain anything).
      if (!e) ++out_.unparseable;
      return;
    }
    if (!out_.events.empty()) out_.dropped += pending_dropped_;
    pending_dropped_ = 0;
    out_.events.push_back(std::move(*e));
  } else if (line.find(dropped_marker) != std::string_view::npos) {
    if (auto e = parse_event(line); e && e->kind == event_kind::log_dropped) pending_dropped_ += e->count.value_or(0);
    else if (!e) ++out_.unparseable;
  }
}

void session_filter::feed_unreadable() {
  ++out_.lines;
  ++out_.unparseable;
}

session_log session_filter::finish() && { return std::move(out_); }

base::result<session_log> read_session(const std::string& path, std::string_view session) {
  const auto failure = [&](std::string_view what) {
    return base::result<session_log>(boost::system::in_place_error,
                                     path + ": " + std::string(what) + ": " + base::errno_text());
  };
  using file_ptr = std::unique_ptr<std::FILE, int (*)(std::FILE*)>;
  file_ptr owned(nullptr, std::fclose);
  std::FILE* in = stdin;
  if (path != "-") {
    owned.reset(std::fopen(path.c_str(), "rb"));
    if (!owned) return failure("cannot open the log");
    in = owned.get();
  }
  session_filter filter{std::string(session)};
  std::vector<char> block(1 << 20);
  std::string carry;      // a line split across blocks
  bool skipping = false;  // inside a line longer than max_line
  for (;;) {
    const auto n = std::fread(block.data(), 1, block.size(), in);
    if (n == 0) break;
    std::string_view data(block.data(), n);
    while (!data.empty()) {
      const auto nl = data.find('\n');
      if (nl == std::string_view::npos) {
        if (!skipping && carry.size() + data.size() <= max_line) carry.append(data);
        else skipping = true, carry.clear();
        break;
      }
      const auto piece = data.substr(0, nl);
      data.remove_prefix(nl + 1);
      if (skipping || carry.size() + piece.size() > max_line) {
        filter.feed_unreadable();
        skipping = false;
        carry.clear();
      } else if (!carry.empty()) {
        carry.append(piece);
        filter.feed(carry);
        carry.clear();
      } else {
        filter.feed(piece);
      }
    }
  }
  if (std::ferror(in)) return failure("cannot read the log");
  if (skipping) filter.feed_unreadable();
  else if (!carry.empty()) filter.feed(carry);  // a last line without its newline
  auto out = std::move(filter).finish();
  out.path = path;
  return out;
}

}  // namespace airlock::record
