#include "core/decision.hpp"

#include <cstdio>
#include <ctime>

namespace airlock::core {
namespace {

void append_escaped(std::string& out, std::string_view s) {
  out += '"';
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20 || c >= 0x7f) {
          // Each byte on its own (as U+00XX): lossless, and always valid UTF-8.
          char buf[7];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  out += '"';
}

void field(std::string& out, std::string_view key) {
  out += out.size() > 1 ? ",\"" : "\"";
  out += key;
  out += "\":";
}

void string_or_null(std::string& out, std::string_view key, const std::string& value) {
  field(out, key);
  if (value.empty()) out += "null";
  else append_escaped(out, value);
}

void number_or_null(std::string& out, std::string_view key, const std::optional<std::uint64_t>& value) {
  field(out, key);
  out += value ? std::to_string(*value) : "null";
}

std::string rfc3339_micros(std::chrono::system_clock::time_point tp) {
  using namespace std::chrono;
  auto micros = duration_cast<microseconds>(tp.time_since_epoch()).count();
  std::time_t secs = static_cast<std::time_t>(micros / 1000000);
  std::tm utc{};
  gmtime_r(&secs, &utc);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%06lldZ", utc.tm_year + 1900, utc.tm_mon + 1,
                utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec, static_cast<long long>(micros % 1000000));
  return buf;
}

void string_array(std::string& out, std::string_view key, const std::vector<std::string>& values) {
  field(out, key);
  out += '[';
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (i) out += ',';
    append_escaped(out, values[i]);
  }
  out += ']';
}

void session_fields(std::string& out, const decision_record& r) {
  // Sessions are not decisions; the contract's keys stay (null) so every line has the
  // same core shape.
  out += ",\"client\":null,\"name\":null,\"dst\":null,\"upstream\":null,\"proto\":null"
         ",\"verdict\":null,\"reason\":null,\"rule\":null,\"conn\":null";
  string_or_null(out, "action", r.action);
  string_or_null(out, "policy", r.policy);
  string_or_null(out, "mode", r.mode);
  string_array(out, "sources", r.sources);
  number_or_null(out, "dns_queries", r.dns_queries);
  number_or_null(out, "connections_allowed", r.connections_allowed);
  number_or_null(out, "connections_denied", r.connections_denied);
  number_or_null(out, "bytes_up", r.bytes_up);
  number_or_null(out, "bytes_down", r.bytes_down);
  number_or_null(out, "duration_ms", r.duration_ms);
}

}  // namespace

std::string json_quote(std::string_view s) {
  std::string out;
  append_escaped(out, s);
  return out;
}

std::string_view to_string(event_kind e) noexcept {
  switch (e) {
    case event_kind::dns: return "dns";
    case event_kind::connect: return "connect";
    case event_kind::http: return "http";
    case event_kind::session: return "session";
  }
  return "connect";
}

std::string render_json_line(const decision_record& r) {
  std::string out;
  out.reserve(512);
  out += '{';
  field(out, "ts");
  append_escaped(out, rfc3339_micros(r.ts));
  field(out, "event");
  append_escaped(out, to_string(r.event));
  string_or_null(out, "session", r.session);
  field(out, "labels");
  out += '{';
  for (std::size_t i = 0; i < r.labels.size(); ++i) {
    if (i) out += ',';
    append_escaped(out, r.labels[i].first);
    out += ':';
    append_escaped(out, r.labels[i].second);
  }
  out += '}';
  string_or_null(out, "tool_call", r.tool_call);
  if (r.event == event_kind::session) {
    session_fields(out, r);
    out += "}\n";
    return out;
  }
  string_or_null(out, "client", r.client);
  string_or_null(out, "name", r.name);
  string_or_null(out, "dst", r.dst);
  string_or_null(out, "upstream", r.upstream);
  string_or_null(out, "proto", r.proto);
  field(out, "verdict");
  append_escaped(out, policy::to_string(r.verdict));
  field(out, "reason");
  append_escaped(out, policy::to_string(r.reason));
  string_or_null(out, "rule", r.rule);
  field(out, "conn");
  out += r.conn ? std::to_string(r.conn) : "null";  // DNS queries are not connections
  string_or_null(out, "policy", r.policy);
  string_or_null(out, "policy_version", r.policy_version);
  field(out, "process");
  out += r.process_json.empty() ? std::string_view("null") : std::string_view(r.process_json);
  if (r.event == event_kind::dns) {
    string_or_null(out, "qtype", r.qtype);
    string_or_null(out, "rcode", r.rcode);
    string_array(out, "answers", r.answers);
  } else {
    if (r.event == event_kind::http) {
      string_or_null(out, "method", r.method);
      string_or_null(out, "path", r.path);
      number_or_null(out, "status", r.status);
    }
    number_or_null(out, "bytes_up", r.bytes_up);
    number_or_null(out, "bytes_down", r.bytes_down);
    number_or_null(out, "duration_ms", r.duration_ms);
  }
  if (!r.notes.empty()) string_array(out, "notes", r.notes);
  out += "}\n";
  return out;
}

}  // namespace airlock::core
