// A story as text for people: the tree of steps, the totals and the denials.
#include "evidence/story.hpp"

#include <cinttypes>
#include <cstdio>

namespace airlock::evidence {
// The log's lines as record/ reads them back: this file is about nothing else.
using record::event;
using record::event_kind;
using record::printable;
using record::process_info;
namespace {

std::string human_bytes(std::uint64_t n) {
  static constexpr const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  if (n < 1024) return std::to_string(n) + " B";
  double v = static_cast<double>(n);
  std::size_t u = 0;
  while (v >= 1024 && u + 1 < std::size(units)) v /= 1024, ++u;
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f %s", v, units[u]);
  return buf;
}

std::string human_ms(std::uint64_t ms) {
  if (ms < 1000) return std::to_string(ms) + " ms";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f s", static_cast<double>(ms) / 1000.0);
  return buf;
}

std::string bytes_and_time(const event& e) {
  std::string b;
  if (e.bytes_up || e.bytes_down)
    b = human_bytes(e.bytes_up.value_or(0)) + " up, " + human_bytes(e.bytes_down.value_or(0)) + " down";
  if (e.duration_ms) b += (b.empty() ? "" : ", ") + human_ms(*e.duration_ms);
  return b;
}

std::string plural(std::uint64_t n, std::string_view one, std::string_view many) {
  return std::to_string(n) + " " + std::string(n == 1 ? one : many);
}

std::string describe(const totals& t) {
  std::string out = plural(t.dns_queries, "DNS query", "DNS queries") + ", " +
                    plural(t.connections_allowed, "connection", "connections") + " allowed, " +
                    std::to_string(t.connections_denied) + " denied, " + human_bytes(t.bytes_up) + " up, " +
                    human_bytes(t.bytes_down) + " down";
  if (t.duration_ms) out += ", " + human_ms(*t.duration_ms);
  return out;
}

}  // namespace

// Declared in the header only so line_renderer can keep one; used nowhere else.
class text_renderer {
 public:
  explicit text_renderer(text_options o) : o_(o) {}

  std::string render(const story& s) {
    out_ += "session " + printable(s.session);
    if (!s.policy.empty()) out_ += "  policy " + printable(s.policy);
    if (!s.labels.empty()) {
      out_ += "  labels";
      for (const auto& [k, v] : s.labels) out_ += " " + printable(k) + "=" + printable(v);
    }
    out_ += "\nlog " + printable(s.log) + ": " + plural(s.lines, "line", "lines") + " for this session, times UTC\n\n";
    for (std::size_t i = 0; i < s.steps.size(); ++i) tree(s.steps[i], "", i + 1 == s.steps.size());
    out_ += "\n";
    if (s.closed) {
      out_ += "totals (session close): " + describe(*s.closed) + "\n";
      if (!same_counts(*s.closed, s.counted))
        out_ += "  the log's lines count " + describe(s.counted) + ": some lines are missing from this log\n";
    } else {
      out_ += "totals (from the lines; no session close line): " + describe(s.counted) + "\n";
    }
    const auto denied = s.denials();
    if (denied.empty()) {
      out_ += "no denials\n";
    } else {
      out_ += plural(denied.size(), "denial", "denials") + ":\n";
      for (const auto* d : denied) {
        const event& by = *d->denial();
        out_ += "  " + marker(by.verdict) + " " + time_of(by, true) + " " + printable(by.line.at("event").as_string()) +
                " " + target(*d) + " " + printable(by.reason);
        if (d->ev.process) out_ += " (" + process_text(*d->ev.process, false) + ")";
        out_ += "\n";
      }
    }
    if (s.dropped)
      out_ += "the log writer dropped " + plural(s.dropped, "line", "lines") +
              " while this session ran (log_dropped): the story may be incomplete\n";
    if (s.unparseable) out_ += plural(s.unparseable, "unparseable line", "unparseable lines") + " ignored\n";
    return std::move(out_);
  }

 private:
  static bool same_counts(const totals& a, const totals& b) {
    return a.dns_queries == b.dns_queries && a.connections_allowed == b.connections_allowed &&
           a.connections_denied == b.connections_denied;
  }

  std::string paint(std::string_view code, const std::string& text) const {
    if (!o_.colour) return text;
    return "\x1b[" + std::string(code) + "m" + text + "\x1b[0m";
  }

  std::string marker(const std::string& verdict) const {
    if (verdict == "allow") return paint("32", "allow");
    if (verdict == "audit-deny") return paint("1;33", "AUDIT-DENY");
    if (verdict == "deny") return paint("1;31", "DENY");
    return printable(verdict);
  }

  // "14:21:16.120", with the date first whenever it changes.
  std::string time_of(const event& e, bool with_date) {
    if (e.ts.size() < 23 || !e.ts_us) return e.ts.empty() ? "?" : printable(e.ts);
    const auto date = e.ts.substr(0, 10);
    const auto time = e.ts.substr(11, 12);
    if (with_date) return date + " " + time;
    if (date != last_date_) {
      last_date_ = date;
      return date + " " + time;
    }
    return time;
  }

  static std::string target(const step& s) {
    const auto& e = s.ev;
    std::string out = s.name.empty() ? "(no name)" : printable(s.name);
    if (s.name_from_dns) out += " (name from DNS)";
    if (e.kind != event_kind::dns && !e.dst.empty()) out += " " + printable(e.dst);
    return out;
  }

  // "npm install -> sh -> node -> curl", or "process unknown: socket not found".
  static std::string process_text(const process_info& p, bool details) {
    if (!p.unknown.empty()) return "process unknown: " + printable(p.unknown);
    std::string out = printable(p.lineage());
    if (details && (p.pid || !p.cmdline.empty())) {
      out += " (";
      if (p.pid) out += "pid " + std::to_string(*p.pid);
      if (p.pid && !p.cmdline.empty()) out += ": ";
      out += printable(p.cmdline) + ")";
    }
    return out;
  }

  std::string header(const step& s) { return time_of(s.ev, false) + " " + what(s); }

 public:
  // One line as it happens: the time, the session, what, and the details after it.
  std::string line(const event& e) {
    one_line_ = true;
    step s;
    s.ev = e;
    s.name = e.name;
    std::string out = time_of(e, false) + " " + printable(e.session.empty() ? "-" : e.session) + " " + what(s);
    for (const auto& d : details(s)) out += "; " + d;
    return out + "\n";
  }

 private:
  // The step without its time: "dns A name -> answers", "connect tls name dst"...
  std::string what(const step& s) {
    const auto& e = s.ev;
    std::string out;
    switch (e.kind) {
      case event_kind::session:
        out += "session " + printable(e.action);
        if (!e.policy.empty()) out += ", policy " + printable(e.policy);
        if (!e.sources.empty()) {
          out += ", sources";
          for (const auto& src : e.sources) out += " " + printable(src);
        }
        return out;
      case event_kind::grant:
        out += "grant " + printable(e.action) + " " + printable(s.name) + " (" + printable(e.rule) + ")";
        return out;
      case event_kind::dns: {
        out += "dns " + printable(e.qtype.empty() ? "?" : e.qtype) + " " + printable(s.name);
        if (!e.answers.empty()) {
          out += " ->";
          for (std::size_t i = 0; i < e.answers.size(); ++i) out += (i ? ", " : " ") + printable(e.answers[i]);
        }
        if (!e.rcode.empty()) out += " " + printable(e.rcode);
        return out;
      }
      case event_kind::connect:
      case event_kind::http:
      case event_kind::close:
        out += printable(e.line.at("event").as_string());
        if (!e.proto.empty()) out += " " + printable(e.proto);
        out += " " + target(s);
        if (!e.upstream.empty() && e.upstream != e.dst) out += " via " + printable(e.upstream);
        if (e.kind == event_kind::http) {
          // The request itself: "GET /tiny-pkg -> 200".
          auto text = [&](const char* key) -> std::string {
            const auto* v = e.line.if_contains(key);
            return v && v->is_string() ? printable(v->as_string()) : std::string();
          };
          if (const auto m = text("method"); !m.empty()) out += " " + m + " " + text("path");
          if (const auto* st = e.line.if_contains("status"); st && st->is_int64())
            out += " -> " + std::to_string(st->as_int64());
        }
        return out;
      default: return out + printable(e.line.at("event").as_string());
    }
  }

  std::vector<std::string> details(const step& s) {
    const auto& e = s.ev;
    std::vector<std::string> lines;
    if (e.kind == event_kind::session) {
      if (e.action == "close" && (e.dns_queries || e.connections_allowed || e.connections_denied)) {
        totals t;
        t.dns_queries = e.dns_queries.value_or(0);
        t.connections_allowed = e.connections_allowed.value_or(0);
        t.connections_denied = e.connections_denied.value_or(0);
        t.bytes_up = e.bytes_up.value_or(0);
        t.bytes_down = e.bytes_down.value_or(0);
        t.duration_ms = e.duration_ms;
        lines.push_back(describe(t));
      }
      return lines;
    }
    if (e.is_decision()) {
      std::string d = marker(e.verdict) + " " + printable(e.reason) + " (rule " +
                      printable(e.rule.empty() ? "?" : e.rule);
      if (e.verdict == "audit-deny") d += "; let through in audit mode";
      lines.push_back(d + ")");
    }
    if (s.name_differs_from_dns) lines.push_back("not the name the DNS query above asked for");
    if (e.process) lines.push_back((e.process->unknown.empty() ? "process " : "") + process_text(*e.process, true));
    // The tool call is said when it changes, not on every line of it.
    if (e.tool_call != tool_call_) {
      tool_call_ = e.tool_call;
      if (!e.tool_call.empty()) lines.push_back("tool call " + printable(e.tool_call));
    }
    // One line at a time, a connection's decision says nothing of what came after it: that
    // is its close line's, to come.
    if (e.kind == event_kind::close || (e.kind == event_kind::connect && !s.closed && !one_line_)) {
      // Since log schema 2 an allowed connection's totals are on its close line; its
      // decision line's duration is how long deciding took.
      if (e.kind == event_kind::connect && !e.denied() && e.line.contains("schema"))
        lines.push_back("no close line: open when the log ends, or airlock stopped before it closed");
      else if (auto b = bytes_and_time(e); !b.empty()) lines.push_back(b);
    }
    notes_line(lines, "notes:", e.notes);
    if (s.closed) {
      const auto& c = *s.closed;
      std::string end = "closed " + time_of(c, false);
      if (auto b = bytes_and_time(c); !b.empty()) end += ": " + b;
      if (c.is_cut()) end += "; " + marker(c.verdict) + " " + printable(c.reason) + " (cut on its way)";
      lines.push_back(end);
      if (c.tool_call != e.tool_call && !c.tool_call.empty())
        lines.push_back("  by then tool call " + printable(c.tool_call));
      notes_line(lines, "  notes:", c.notes);
    }
    return lines;
  }

  static void notes_line(std::vector<std::string>& lines, const char* title, const std::vector<std::string>& notes) {
    if (notes.empty()) return;
    std::string n = title;
    for (const auto& note : notes) n += " " + printable(note);
    lines.push_back(std::move(n));
  }

  void tree(const step& s, const std::string& prefix, bool last) {
    out_ += prefix + (last ? "└─ " : "├─ ") + header(s) + "\n";
    const std::string below = prefix + (last ? "   " : "│  ");
    const std::string detail = below + (s.children.empty() ? "  " : "│ ");
    for (const auto& line : details(s)) out_ += detail + line + "\n";
    for (std::size_t i = 0; i < s.children.size(); ++i) tree(s.children[i], below, i + 1 == s.children.size());
  }

  text_options o_;
  bool one_line_ = false;  // line(): each event alone, not a story's tree
  std::string out_;
  std::string last_date_;
  std::string tool_call_;
};

std::string render_text(const story& s, text_options o) { return text_renderer(o).render(s); }

line_renderer::line_renderer(text_options o) : impl_(std::make_unique<text_renderer>(o)) {}
line_renderer::~line_renderer() = default;
std::string line_renderer::render(const record::event& e) { return impl_->line(e); }

}  // namespace airlock::evidence
