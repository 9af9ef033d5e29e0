#include "record/event.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <algorithm>
#include <charconv>

namespace airlock::record {
namespace json = boost::json;
namespace {

std::string string_of(const json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  if (!v) return {};
  if (const auto* s = v->if_string()) return std::string(*s);
  return {};
}

std::optional<std::uint64_t> unsigned_of(const json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  if (!v) return std::nullopt;
  if (const auto* u = v->if_uint64()) return *u;
  if (const auto* i = v->if_int64(); i && *i >= 0) return static_cast<std::uint64_t>(*i);
  return std::nullopt;
}

std::optional<std::int64_t> signed_of(const json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  if (!v) return std::nullopt;
  if (const auto* i = v->if_int64()) return *i;
  if (const auto* u = v->if_uint64(); u && *u <= static_cast<std::uint64_t>(INT64_MAX))
    return static_cast<std::int64_t>(*u);
  return std::nullopt;
}

std::vector<std::string> strings_of(const json::object& o, std::string_view key) {
  std::vector<std::string> out;
  const auto* v = o.if_contains(key);
  if (!v || !v->is_array()) return out;
  for (const auto& item : v->get_array())
    if (const auto* s = item.if_string()) out.emplace_back(*s);
  return out;
}

process_info process_of(const json::object& o) {
  process_info p;
  p.unknown = string_of(o, "unknown");
  p.pid = signed_of(o, "pid");
  p.comm = string_of(o, "comm");
  p.cmdline = string_of(o, "cmdline");
  if (const auto* chain = o.if_contains("chain"); chain && chain->is_array()) {
    for (const auto& item : chain->get_array()) {
      if (!item.is_object()) continue;
      const auto& e = item.get_object();
      p.chain.push_back({signed_of(e, "pid"), string_of(e, "comm"), string_of(e, "cmdline")});
    }
  }
  // A lookup that failed but says nothing still counts as unknown.
  if (p.unknown.empty() && !p.pid && p.comm.empty() && p.chain.empty()) p.unknown = "no details";
  return p;
}

// The writer's own names (to_string), so the two cannot drift apart.
event_kind kind_of(std::string_view e) {
  for (auto k : {event_kind::dns, event_kind::connect, event_kind::http, event_kind::session, event_kind::close,
                 event_kind::log_dropped, event_kind::grant})
    if (to_string(k) == e) return k;
  return event_kind::other;
}

// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's days_from_civil).
std::int64_t days_from_civil(std::int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const std::int64_t era = (y >= 0 ? y : y - 399) / 400;
  const auto yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<std::int64_t>(doe) - 719468;
}

bool digits(std::string_view s, std::size_t at, std::size_t n, unsigned& out) {
  if (at + n > s.size()) return false;
  out = 0;
  for (std::size_t i = at; i < at + n; ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    out = out * 10 + static_cast<unsigned>(s[i] - '0');
  }
  return true;
}

}  // namespace

std::string process_info::lineage() const {
  if (!unknown.empty()) return {};
  auto label = [](const std::string& name, const std::string& command) {
    if (!name.empty()) return name;
    return command.substr(0, command.find(' '));
  };
  if (chain.empty()) return label(comm, cmdline);
  std::string out;
  for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
    if (!out.empty()) out += " -> ";
    const auto l = label(it->comm, it->cmdline);
    out += l.empty() ? "?" : l;
  }
  return out;
}

bool event::has_note(std::string_view note) const { return std::find(notes.begin(), notes.end(), note) != notes.end(); }

std::optional<event> parse_event(std::string_view line) {
  boost::system::error_code ec;
  auto v = json::parse(line, ec);
  if (ec || !v.is_object()) return std::nullopt;
  event e;
  e.line = std::move(v.get_object());
  const auto& o = e.line;
  const auto* kind = o.if_contains("event");
  if (!kind || !kind->is_string()) return std::nullopt;
  e.kind = kind_of(kind->get_string());
  e.ts = string_of(o, "ts");
  e.ts_us = parse_ts(e.ts);
  e.session = string_of(o, "session");
  if (const auto* labels = o.if_contains("labels"); labels && labels->is_object()) {
    for (const auto& [k, val] : labels->get_object())
      e.labels.emplace_back(std::string(k), val.is_string() ? std::string(val.get_string()) : json::serialize(val));
  }
  e.tool_call = string_of(o, "tool_call");
  e.client = string_of(o, "client");
  e.name = string_of(o, "name");
  e.dst = string_of(o, "dst");
  e.upstream = string_of(o, "upstream");
  e.proto = string_of(o, "proto");
  e.verdict = string_of(o, "verdict");
  e.reason = string_of(o, "reason");
  e.rule = string_of(o, "rule");
  e.policy = string_of(o, "policy");
  e.policy_version = string_of(o, "policy_version");
  e.conn = unsigned_of(o, "conn");
  e.qtype = string_of(o, "qtype");
  e.rcode = string_of(o, "rcode");
  e.answers = strings_of(o, "answers");
  e.method = string_of(o, "method");
  e.path = string_of(o, "path");
  e.status = unsigned_of(o, "status");
  e.bytes_up = unsigned_of(o, "bytes_up");
  e.bytes_down = unsigned_of(o, "bytes_down");
  e.duration_ms = unsigned_of(o, "duration_ms");
  e.notes = strings_of(o, "notes");
  if (const auto* p = o.if_contains("process"); p && p->is_object()) e.process = process_of(p->get_object());
  e.action = string_of(o, "action");
  e.mode = string_of(o, "mode");
  e.sources = strings_of(o, "sources");
  e.dns_queries = unsigned_of(o, "dns_queries");
  e.connections_allowed = unsigned_of(o, "connections_allowed");
  e.connections_denied = unsigned_of(o, "connections_denied");
  e.count = unsigned_of(o, "count");
  return e;
}

std::optional<std::int64_t> parse_ts(std::string_view ts) {
  // YYYY-MM-DDTHH:MM:SS[.ffffff](Z|+00:00)
  unsigned y = 0, mo = 0, d = 0, h = 0, mi = 0, s = 0;
  if (!digits(ts, 0, 4, y) || ts.size() < 20 || ts[4] != '-' || !digits(ts, 5, 2, mo) || ts[7] != '-' ||
      !digits(ts, 8, 2, d) || (ts[10] != 'T' && ts[10] != 't' && ts[10] != ' ') || !digits(ts, 11, 2, h) ||
      ts[13] != ':' || !digits(ts, 14, 2, mi) || ts[16] != ':' || !digits(ts, 17, 2, s))
    return std::nullopt;
  if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || s > 60) return std::nullopt;
  std::size_t i = 19;
  std::int64_t micros = 0;
  if (i < ts.size() && ts[i] == '.') {
    int n = 0;
    for (++i; i < ts.size() && ts[i] >= '0' && ts[i] <= '9'; ++i, ++n)
      if (n < 6) micros = micros * 10 + (ts[i] - '0');
    if (n == 0) return std::nullopt;
    for (; n < 6; ++n) micros *= 10;
  }
  const auto zone = ts.substr(i);
  if (zone != "Z" && zone != "z" && zone != "+00:00") return std::nullopt;
  const std::int64_t secs = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + s;
  return secs * 1000000 + micros;
}

std::string_view address_part(std::string_view ip_port) {
  if (ip_port.starts_with('[')) {
    const auto close = ip_port.find(']');
    return close == std::string_view::npos ? ip_port : ip_port.substr(1, close - 1);
  }
  const auto colon = ip_port.rfind(':');
  // A bare IPv6 address (more than one colon, no brackets) has no port.
  if (colon == std::string_view::npos || ip_port.find(':') != colon) return ip_port;
  return ip_port.substr(0, colon);
}

std::optional<std::uint16_t> port_part(std::string_view ip_port) {
  std::string_view port;
  if (ip_port.starts_with('[')) {
    const auto close = ip_port.find("]:");
    if (close == std::string_view::npos) return std::nullopt;
    port = ip_port.substr(close + 2);
  } else {
    const auto colon = ip_port.rfind(':');
    if (colon == std::string_view::npos || ip_port.find(':') != colon) return std::nullopt;
    port = ip_port.substr(colon + 1);
  }
  unsigned value = 0;
  const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
  if (ec != std::errc{} || end != port.data() + port.size() || value > 65535) return std::nullopt;
  return static_cast<std::uint16_t>(value);
}

std::string printable(std::string_view s) {
  static constexpr char hex[] = "0123456789abcdef";
  std::string out;
  out.reserve(s.size());
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out += ch;
    } else {
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 0xf];
    }
  }
  return out;
}

}  // namespace airlock::record
