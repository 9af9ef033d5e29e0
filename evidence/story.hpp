#pragma once
// A session's lines as a story: each connection under the DNS query that gave it its
// destination address, with its HTTP requests and its close line joined to it (by `conn`,
// in whatever order they were written), the session's open and close, and the totals.
// Rendered as text for people and as JSON for tools.
#include "record/log_reader.hpp"

#include <boost/json/value.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace airlock::evidence {

struct step {
  record::event ev;
  // The name shown: the line's own (SNI, Host, qname), or for a connection that carried
  // none, the name of the DNS query whose answer was its destination.
  std::string name;
  bool name_from_dns = false;
  // A connection under a DNS query for another name (its SNI or Host is not what was
  // asked; shared CDN addresses, or a name aimed at someone else's address).
  bool name_differs_from_dns = false;
  std::vector<step> children;           // dns: the connections to its answers; connect: its HTTP requests
  std::optional<record::event> closed;  // connect: its close line (bytes, duration, how it ended)

  // The line that denied: the decision, or the close line of a connection cut on its way.
  const record::event* denial() const;
};

struct totals {
  std::uint64_t dns_queries = 0;
  std::uint64_t connections_allowed = 0;
  std::uint64_t connections_denied = 0;  // audit-deny included, as in the session close line
  std::uint64_t bytes_up = 0;
  std::uint64_t bytes_down = 0;
  std::optional<std::uint64_t> duration_ms;
  bool operator==(const totals&) const = default;
};

struct story {
  std::string session;
  std::string log;  // the file it was read from
  std::string policy;
  std::vector<std::pair<std::string, std::string>> labels;
  std::vector<step> steps;       // in log order; connections may sit under a DNS step instead
  totals counted;                // computed from the lines
  std::optional<totals> closed;  // from the session close line(s), when the log has them
  std::size_t unparseable = 0;
  std::uint64_t dropped = 0;
  std::size_t lines = 0;  // the session's lines

  std::vector<const step*> denials() const;  // every deny, audit-deny and cut, in tree order
};

story build_story(record::session_log log);

struct text_options {
  bool colour = false;  // ANSI colours (only for a terminal)
};
std::string render_text(const story& s, text_options o = {});

class text_renderer;
// Lines one at a time, as they happen (`airlock tail`): each as `explain` heads its step,
// with the session after the time and the step's details after it on the same line. The
// date is said when it changes, the tool call likewise: it keeps what it last said.
class line_renderer {
 public:
  explicit line_renderer(text_options o = {});
  ~line_renderer();
  std::string render(const record::event& e);  // one line, with its newline

 private:
  std::unique_ptr<text_renderer> impl_;
};
// The same tree: {"session", "log", "policy", "labels", "steps": [{"line": <the log line
// as written>, "name", "name_from_dns", "lineage", "children": [...]}], "totals", ...}.
boost::json::value to_json(const story& s);

}  // namespace airlock::evidence
