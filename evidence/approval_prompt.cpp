#include "evidence/approval_prompt.hpp"

#include "base/trim.hpp"
#include "evidence/story.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

namespace airlock::evidence {

namespace json = boost::json;

namespace {

std::string text_at(const json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  return v && v->is_string() ? std::string(v->as_string()) : std::string();
}

std::optional<json::object> object_of(std::string_view line) {
  boost::system::error_code ec;
  auto v = json::parse(line, ec);
  if (ec || !v.is_object()) return std::nullopt;
  return std::move(v.as_object());
}

}  // namespace

std::optional<approval_question> parse_approval_question(std::string_view line) {
  auto o = object_of(line);
  if (!o || text_at(*o, "event") != "approval") return std::nullopt;
  approval_question q;
  q.id = text_at(*o, "id");
  q.session = text_at(*o, "session");
  q.name = text_at(*o, "name");
  if (q.id.empty()) return std::nullopt;
  if (const auto* p = o->if_contains("port"); p && p->is_int64() && p->as_int64() > 0 && p->as_int64() < 65536)
    q.port = static_cast<std::uint16_t>(p->as_int64());
  if (const auto* e = o->if_contains("expires_in_ms"); e && e->is_int64()) q.expires_in_ms = e->as_int64();
  if (const auto* e = o->if_contains("expires_at_ms"); e && e->is_int64()) q.expires_at_ms = e->as_int64();
  if (const auto* d = o->if_contains("decision"); d && d->is_object())
    q.decision = record::parse_event(json::serialize(*d));
  q.line = std::string(line);
  return q;
}

std::optional<std::string> approval_end_id(std::string_view line) {
  auto o = object_of(line);
  if (!o || text_at(*o, "event") != "approval_end") return std::nullopt;
  return text_at(*o, "id");
}

std::string approval_prompt(const approval_question& q, bool colour) {
  const auto bold = [&](const std::string& s) { return colour ? "\x1b[1m" + s + "\x1b[0m" : s; };
  std::string target = q.port == 0 ? q.name : q.name + ":" + std::to_string(q.port);
  std::string out = "airlock: " + bold(q.session) + " wants " + bold(target);
  if (q.decision && !q.decision->tool_call.empty()) out += " in tool call " + q.decision->tool_call;
  out += q.port == 0 ? " (a DNS lookup)" : " (a connection)";
  out += " [" + q.id + "]\n";
  if (q.decision) {
    // The denial as `airlock tail` shows it: the step, DENY, the reason, the rule, the process.
    line_renderer render({colour});
    out += "  " + render.render(*q.decision);
  }
  const auto seconds = (q.expires_in_ms + 999) / 1000;
  out += "  allow once [o], for the session [s], or deny [D]? (" + std::to_string(seconds) + " s) ";
  return out;
}

std::optional<std::string> parse_approval_reply(std::string_view typed) {
  std::string t(base::trim(typed));
  for (auto& c : t) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  if (t == "o" || t == "once" || t == "allow-once") return "allow-once";
  if (t == "s" || t == "session" || t == "allow-session") return "allow-session";
  if (t.empty() || t == "d" || t == "deny" || t == "n" || t == "no") return "deny";
  return std::nullopt;
}

}  // namespace airlock::evidence
