#include "record/decision.hpp"

#include "base/json_string.hpp"
#include "record/fields.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <ctime>

namespace airlock::record {
namespace {

// The line under construction: bytes go straight into the string's buffer, grown
// (doubled) when a write would not fit, so a field costs a bounds check and a copy rather
// than a std::string append call each. finish() cuts the string to what was written.
class line {
 public:
  // Writes after what `s` holds already.
  line(std::string& s, std::size_t initial) : s_(s), start_(s.size()) {
    s_.resize(start_ + initial);
    p_ = s_.data() + start_;
    end_ = s_.data() + s_.size();
  }
  // What this line has written so far.
  std::size_t size() const noexcept { return static_cast<std::size_t>(p_ - s_.data()) - start_; }
  // Room for n more bytes at the returned pointer; commit them with advance().
  char* room(std::size_t n) {
    if (static_cast<std::size_t>(end_ - p_) < n) grow(n);
    return p_;
  }
  void advance(std::size_t n) noexcept { p_ += n; }
  void append(const char* data, std::size_t n) {
    if (n == 0) return;
    std::memcpy(room(n), data, n);
    p_ += n;
  }
  line& operator+=(std::string_view v) {
    append(v.data(), v.size());
    return *this;
  }
  line& operator+=(char c) {
    *room(1) = c;
    ++p_;
    return *this;
  }
  void finish() { s_.resize(used()); }

 private:
  std::size_t used() const noexcept { return static_cast<std::size_t>(p_ - s_.data()); }
  void grow(std::size_t n) {
    const std::size_t used_now = used();
    s_.resize(std::max(2 * s_.size(), used_now + n));
    p_ = s_.data() + used_now;
    end_ = s_.data() + s_.size();
  }
  std::string& s_;
  std::size_t start_;
  char* p_;
  char* end_;
};

void append_escaped(line& out, std::string_view s) {
  std::size_t i = 0;
  while (i < s.size() && base::json_plain(static_cast<unsigned char>(s[i]))) ++i;
  if (i == s.size()) {
    // Nothing to escape (the usual case): quotes and value in one write.
    char* p = out.room(s.size() + 2);
    p[0] = '"';
    if (!s.empty()) std::memcpy(p + 1, s.data(), s.size());
    p[s.size() + 1] = '"';
    out.advance(s.size() + 2);
    return;
  }
  out += '"';
  out.append(s.data(), i);
  while (i < s.size()) {
    // The usual value has nothing to escape: copy plain runs in one append.
    std::size_t run = i;
    while (run < s.size() && base::json_plain(static_cast<unsigned char>(s[run]))) ++run;
    if (run > i) {
      out.append(s.data() + i, run - i);
      i = run;
      if (i == s.size()) break;
    }
    char escaped[6];
    out.append(escaped, base::json_escape(static_cast<unsigned char>(s[i++]), escaped));
  }
  out += '"';
}

void append_number(line& out, std::uint64_t v) {
  char buf[20];
  const auto end = std::to_chars(buf, buf + sizeof buf, v).ptr;
  out.append(buf, static_cast<std::size_t>(end - buf));
}

// The keys are this file's literals: their length is known here, so separator, quoted key
// and colon are copied with a fixed-size copy in one write.
template <std::size_t N>
void field(line& out, const char (&key)[N]) {
  constexpr std::size_t n = N - 1;
  const bool first = out.size() <= 1;
  char* p = out.room(n + 4);
  if (!first) *p++ = ',';
  *p++ = '"';
  std::memcpy(p, key, n);
  p[n] = '"';
  p[n + 1] = ':';
  out.advance(n + (first ? 3 : 4));
}

template <std::size_t N>
void string_or_null(line& out, const char (&key)[N], const std::string& value) {
  field(out, key);
  if (value.empty()) out += "null";
  else append_escaped(out, value);
}

template <std::size_t N>
void number_or_null(line& out, const char (&key)[N], const std::optional<std::uint64_t>& value) {
  field(out, key);
  if (value) append_number(out, *value);
  else out += "null";
}

// Appends `v` as exactly `width` decimal digits (v < 10^width).
void put_digits(char* at, unsigned v, int width) noexcept {
  for (int i = width - 1; i >= 0; --i) {
    at[i] = static_cast<char>('0' + v % 10);
    v /= 10;
  }
}

// The timestamp as "YYYY-MM-DDTHH:MM:SS.ffffffZ", quoted (nothing in it needs escaping).
void append_rfc3339_micros(line& out, std::chrono::system_clock::time_point tp) {
  using namespace std::chrono;
  const auto micros = duration_cast<microseconds>(tp.time_since_epoch()).count();
  // Days since 1970-01-01 to the civil date (H. Hinnant's days_from_civil, inverted):
  // no gmtime_r, no printf, for every time from 1970 to 9999.
  constexpr long long micros_per_day = 86'400'000'000LL;
  if (micros >= 0 && micros < 2'932'897LL * micros_per_day) {  // 10000-01-01
    const long long day_number = micros / micros_per_day;
    const long long in_day = micros % micros_per_day;
    const long long z = day_number + 719468;
    const long long era = z / 146097;
    const auto doe = static_cast<unsigned>(z - era * 146097);
    const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    const unsigned mp = (5 * doy + 2) / 153;
    const unsigned day = doy - (153 * mp + 2) / 5 + 1;
    const unsigned month = mp < 10 ? mp + 3 : mp - 9;
    const auto year = static_cast<unsigned>(static_cast<long long>(yoe) + era * 400 + (month <= 2 ? 1 : 0));
    const auto secs = static_cast<unsigned>(in_day / 1'000'000);
    char buf[29] = {'"', 0, 0,   0, 0, '-', 0, 0, '-', 0, 0, 'T', 0,   0,  ':',
                    0,   0, ':', 0, 0, '.', 0, 0, 0,   0, 0, 0,   'Z', '"'};
    put_digits(buf + 1, year, 4);
    put_digits(buf + 6, month, 2);
    put_digits(buf + 9, day, 2);
    put_digits(buf + 12, secs / 3600, 2);
    put_digits(buf + 15, secs / 60 % 60, 2);
    put_digits(buf + 18, secs % 60, 2);
    put_digits(buf + 21, static_cast<unsigned>(in_day % 1'000'000), 6);
    out.append(buf, sizeof buf);
    return;
  }
  // Before 1970 or after 9999 (a clock gone wrong): printf's rendering, as always.
  std::time_t secs = static_cast<std::time_t>(micros / 1000000);
  std::tm utc{};
  gmtime_r(&secs, &utc);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%06lldZ", utc.tm_year + 1900, utc.tm_mon + 1,
                utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec, static_cast<long long>(micros % 1000000));
  append_escaped(out, buf);
}

template <std::size_t N>
void string_array(line& out, const char (&key)[N], const std::vector<std::string>& values) {
  field(out, key);
  out += '[';
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (i) out += ',';
    append_escaped(out, values[i]);
  }
  out += ']';
}

void session_fields(line& out, const decision_record& r) {
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

void grant_fields(line& out, const decision_record& r) {
  // A grant is not a decision either: what it allows (`name`, as asked) and its `rule`,
  // which the decisions it allows name.
  out += ",\"client\":null";
  string_or_null(out, "name", r.name);
  out += ",\"dst\":null,\"upstream\":null,\"proto\":null,\"verdict\":null,\"reason\":null";
  string_or_null(out, "rule", r.rule);
  out += ",\"conn\":null";
  string_or_null(out, "action", r.action);
  string_or_null(out, "policy", r.policy);
  if (!r.notes.empty()) string_array(out, "notes", r.notes);
}

}  // namespace

std::string_view to_string(event_kind e) noexcept {
  switch (e) {
    case event_kind::dns: return "dns";
    case event_kind::connect: return "connect";
    case event_kind::http: return "http";
    case event_kind::session: return "session";
    case event_kind::close: return "close";
    case event_kind::log_dropped: return "log_dropped";
    case event_kind::grant: return "grant";
    case event_kind::other: return "other";
  }
  return "connect";
}

// A field added to decision_record must be reset below too: this fails until it is.
void reset_for_reuse(decision_record& r) {
  // Copy-assigning a string or a list reuses the memory it holds.
  static const decision_record defaults;
  each_field([](auto& field, const auto& fresh) { field = fresh; }, r, defaults);
  r.ts = std::chrono::system_clock::now();
}

std::string render_json_line(const decision_record& r) {
  std::string text;
  append_json_line(text, r);
  return text;
}

void append_json_line(std::string& text, const decision_record& r) {
  line out(text, 512);
  out += '{';
  field(out, "ts");
  append_rfc3339_micros(out, r.ts);
  field(out, "schema");
  append_number(out, log_schema_version);
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
  if (r.event == event_kind::session || r.event == event_kind::grant) {
    (r.event == event_kind::session ? session_fields : grant_fields)(out, r);
    out += "}\n";
    out.finish();
    return;
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
  if (r.conn) append_number(out, r.conn);  // DNS queries are not connections
  else out += "null";
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
  out.finish();
}

}  // namespace airlock::record
