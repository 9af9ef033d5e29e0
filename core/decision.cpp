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
  out += "{}";
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
  if (r.event == event_kind::dns) {
    string_or_null(out, "qtype", r.qtype);
    string_or_null(out, "rcode", r.rcode);
    field(out, "answers");
    out += '[';
    for (std::size_t i = 0; i < r.answers.size(); ++i) {
      if (i) out += ',';
      append_escaped(out, r.answers[i]);
    }
    out += ']';
  } else {
    number_or_null(out, "bytes_up", r.bytes_up);
    number_or_null(out, "bytes_down", r.bytes_down);
    number_or_null(out, "duration_ms", r.duration_ms);
  }
  if (!r.notes.empty()) {
    field(out, "notes");
    out += '[';
    for (std::size_t i = 0; i < r.notes.size(); ++i) {
      if (i) out += ',';
      append_escaped(out, r.notes[i]);
    }
    out += ']';
  }
  out += "}\n";
  return out;
}

}  // namespace airlock::core
