#include "evidence/story.hpp"

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>

#include <cinttypes>
#include <cstdio>
#include <map>
#include <set>

namespace airlock::evidence {
namespace json = boost::json;
// The log's lines as record/ reads them back: this file is about nothing else.
using record::event;
using record::event_kind;
using record::printable;
using record::process_info;
using record::address_part;
namespace {

// The DNS steps whose answers named an address, so a connection to that address can be
// put under the query that produced it. Forgotten at each session open: a daemon that
// restarted knows none of the old answers.
class answer_index {
 public:
  void add(std::string_view address, std::size_t slot) { by_address_[std::string(address)].push_back(slot); }
  void clear() { by_address_.clear(); }
  // The DNS step a connection to `address` came from: the latest one answered before the
  // connection started, preferring a query for the connection's own name.
  std::optional<std::size_t> find(std::string_view address, const std::string& name,
                                  std::optional<std::int64_t> started_us,
                                  const std::vector<std::optional<step>>& slots) const {
    const auto it = by_address_.find(address);
    if (it == by_address_.end()) return std::nullopt;
    std::optional<std::size_t> best;
    bool best_same_name = false;
    for (auto slot : it->second) {
      const auto& dns = slots[slot]->ev;
      if (started_us && dns.ts_us && *dns.ts_us > *started_us) continue;  // asked after the connection began
      const bool same_name = !name.empty() && dns.name == name;
      if (!best || same_name || !best_same_name) best = slot, best_same_name = same_name;
    }
    if (!best) best = it->second.back();  // clocks disagree: the latest earlier line
    return best;
  }

 private:
  std::map<std::string, std::vector<std::size_t>, std::less<>> by_address_;
};

void add_closed(std::optional<totals>& sum, const event& e) {
  if (!sum) sum = totals{};
  sum->dns_queries += e.dns_queries.value_or(0);
  sum->connections_allowed += e.connections_allowed.value_or(0);
  sum->connections_denied += e.connections_denied.value_or(0);
  sum->bytes_up += e.bytes_up.value_or(0);
  sum->bytes_down += e.bytes_down.value_or(0);
  if (e.duration_ms) sum->duration_ms = sum->duration_ms.value_or(0) + *e.duration_ms;
}

void collect_denials(const std::vector<step>& steps, std::vector<const step*>& out) {
  for (const auto& s : steps) {
    if (s.denial() != nullptr) out.push_back(&s);
    collect_denials(s.children, out);
  }
}

// A connection's lines are joined by `conn`, which counts from 1 again when the daemon
// restarts; each daemon run opens the session again, so (run, conn) names one connection.
using conn_key = std::pair<std::size_t, std::uint64_t>;

// The requests and the close line of each connection whose decision line is in the log,
// whichever order they came in (a decision line first since log schema 2, after its
// requests before). The rest stay steps of their own.
struct connection_parts {
  std::map<conn_key, std::vector<event>> requests;
  std::map<conn_key, event> closes;
};

connection_parts take_connection_parts(std::vector<event>& events) {
  std::set<conn_key> decided;
  std::size_t run = 0;
  for (const auto& e : events) {
    if (e.kind == event_kind::session && e.action == "open") ++run;
    if (e.kind == event_kind::connect && e.conn) decided.insert({run, *e.conn});
  }
  connection_parts parts;
  std::vector<event> rest;
  run = 0;
  for (auto& e : events) {
    if (e.kind == event_kind::session && e.action == "open") ++run;
    const bool part = (e.kind == event_kind::http || e.kind == event_kind::close) && e.conn;
    if (!part || !decided.contains({run, *e.conn})) {
      rest.push_back(std::move(e));
      continue;
    }
    if (e.kind == event_kind::http) parts.requests[{run, *e.conn}].push_back(std::move(e));
    else parts.closes.insert_or_assign({run, *e.conn}, std::move(e));
  }
  events = std::move(rest);
  return parts;
}

// ---- text ----

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

  std::string header(const step& s) {
    const auto& e = s.ev;
    std::string out = time_of(e, false) + " ";
    switch (e.kind) {
      case event_kind::session:
        out += "session " + printable(e.action);
        if (!e.policy.empty()) out += ", policy " + printable(e.policy);
        if (!e.sources.empty()) {
          out += ", sources";
          for (const auto& src : e.sources) out += " " + printable(src);
        }
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
    if (e.kind == event_kind::close || (e.kind == event_kind::connect && !s.closed)) {
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
  std::string out_;
  std::string last_date_;
  std::string tool_call_;
};

// ---- JSON ----

json::object totals_json(const totals& t) {
  json::object o;
  o["dns_queries"] = t.dns_queries;
  o["connections_allowed"] = t.connections_allowed;
  o["connections_denied"] = t.connections_denied;
  o["bytes_up"] = t.bytes_up;
  o["bytes_down"] = t.bytes_down;
  if (t.duration_ms) o["duration_ms"] = *t.duration_ms;
  else o["duration_ms"] = nullptr;
  return o;
}

json::object step_json(const step& s) {
  json::object o;
  o["line"] = s.ev.line;
  o["name"] = s.name;
  o["name_from_dns"] = s.name_from_dns;
  o["name_differs_from_dns"] = s.name_differs_from_dns;
  if (s.ev.process && s.ev.process->unknown.empty()) o["lineage"] = s.ev.process->lineage();
  else o["lineage"] = nullptr;
  json::array children;
  for (const auto& c : s.children) children.push_back(step_json(c));
  o["children"] = std::move(children);
  if (s.closed) o["close"] = s.closed->line;
  else o["close"] = nullptr;
  return o;
}

}  // namespace

const event* step::denial() const {
  if (ev.is_decision() && ev.denied()) return &ev;
  if (closed && closed->is_cut()) return &*closed;
  if (ev.is_cut()) return &ev;  // a close line whose decision is not in this log
  return nullptr;
}

std::vector<const step*> story::denials() const {
  std::vector<const step*> out;
  collect_denials(steps, out);
  return out;
}

story build_story(record::session_log log) {
  story s;
  s.session = log.session;
  s.log = log.path;
  s.unparseable = log.unparseable;
  s.dropped = log.dropped;
  s.lines = log.events.size();
  auto parts = take_connection_parts(log.events);
  std::vector<std::optional<step>> slots;  // optional: a connection moves under its DNS step
  answer_index answers;
  std::optional<std::int64_t> first_ts, last_ts, open_ts;
  std::size_t run = 0;
  for (auto& e : log.events) {
    if (e.ts_us) {
      if (!first_ts) first_ts = e.ts_us;
      last_ts = e.ts_us;
    }
    if (s.policy.empty() && !e.policy.empty()) s.policy = e.policy;
    if (s.labels.empty() && !e.labels.empty()) s.labels = e.labels;
    step st;
    st.name = e.name;
    switch (e.kind) {
      case event_kind::session:
        if (e.action == "open") {
          ++run;
          answers.clear();
          if (!open_ts) open_ts = e.ts_us;
        } else if (e.action == "close") {
          add_closed(s.closed, e);
        }
        break;
      case event_kind::dns:
        ++s.counted.dns_queries;
        for (const auto& a : e.answers) answers.add(a, slots.size());
        break;
      case event_kind::connect: {
        if (e.denied()) ++s.counted.connections_denied;
        else ++s.counted.connections_allowed;
        if (e.conn) {
          const conn_key key{run, *e.conn};
          if (auto it = parts.requests.find(key); it != parts.requests.end())
            for (auto& r : it->second) {
              step request;
              request.name = r.name;
              request.ev = std::move(r);
              st.children.push_back(std::move(request));
            }
          if (auto it = parts.closes.find(key); it != parts.closes.end()) st.closed = std::move(it->second);
        }
        const event& totals_from = st.closed ? *st.closed : e;  // before schema 2, the connect line had them
        s.counted.bytes_up += totals_from.bytes_up.value_or(0);
        s.counted.bytes_down += totals_from.bytes_down.value_or(0);
        std::optional<std::int64_t> started = e.ts_us;
        if (started && e.duration_ms) *started -= static_cast<std::int64_t>(*e.duration_ms) * 1000;
        // A connection goes under the DNS query whose answer it connected to.
        if (auto dns = answers.find(address_part(e.dst), e.name, started, slots)) {
          if (st.name.empty()) {
            st.name = slots[*dns]->ev.name;
            st.name_from_dns = true;
          } else {
            st.name_differs_from_dns = st.name != slots[*dns]->ev.name;
          }
          st.ev = std::move(e);
          slots[*dns]->children.push_back(std::move(st));
          continue;
        }
        break;
      }
      case event_kind::close:  // its connection's line is not in this log
        s.counted.bytes_up += e.bytes_up.value_or(0);
        s.counted.bytes_down += e.bytes_down.value_or(0);
        break;
      default: break;
    }
    st.ev = std::move(e);
    slots.push_back(std::move(st));
  }
  const auto from = open_ts ? open_ts : first_ts;
  if (from && last_ts && *last_ts >= *from)
    s.counted.duration_ms = static_cast<std::uint64_t>((*last_ts - *from) / 1000);
  for (auto& slot : slots)
    if (slot) s.steps.push_back(std::move(*slot));
  return s;
}

std::string render_text(const story& s, text_options o) { return text_renderer(o).render(s); }

json::value to_json(const story& s) {
  json::object o;
  o["session"] = s.session;
  o["log"] = s.log;
  o["policy"] = s.policy;
  json::object labels;
  for (const auto& [k, v] : s.labels) labels[k] = v;
  o["labels"] = std::move(labels);
  json::array steps;
  for (const auto& st : s.steps) steps.push_back(step_json(st));
  o["steps"] = std::move(steps);
  o["totals"] = s.closed ? totals_json(*s.closed) : totals_json(s.counted);
  o["totals_from"] = s.closed ? "session_close" : "lines";
  o["counted"] = totals_json(s.counted);
  json::array denied;
  for (const auto* d : s.denials()) denied.push_back(d->denial()->line);
  o["denials"] = std::move(denied);
  o["lines"] = s.lines;
  o["unparseable_lines"] = s.unparseable;
  o["dropped_lines"] = s.dropped;
  return o;
}

}  // namespace airlock::evidence
