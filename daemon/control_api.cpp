#include "daemon/control_api.hpp"

#include "daemon/approval_answer.hpp"
#include "daemon/decision_stream.hpp"
#include "policy/units.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

namespace airlock::daemon {
namespace {

namespace json = boost::json;

using parse_result = base::result<control::session_request>;

parse_result bad(std::string message) { return parse_result(boost::system::in_place_error, std::move(message)); }

// A JSON object of strings, as labels are written.
base::result<record::label_list> labels_of(const json::value& v, std::string_view field) {
  using result = base::result<record::label_list>;
  if (!v.is_object())
    return result(boost::system::in_place_error, std::string(field) + ": expected an object of strings");
  record::label_list out;
  for (const auto& kv : v.as_object()) {
    if (!kv.value().is_string())
      return result(boost::system::in_place_error,
                    std::string(field) + "." + std::string(kv.key()) + ": expected a string");
    out.emplace_back(std::string(kv.key()), std::string(kv.value().as_string()));
  }
  return out;
}

base::result<std::vector<std::string>> strings_of(const json::value& v, std::string_view field) {
  using result = base::result<std::vector<std::string>>;
  if (!v.is_array())
    return result(boost::system::in_place_error, std::string(field) + ": expected an array of strings");
  std::vector<std::string> out;
  for (const auto& s : v.as_array()) {
    if (!s.is_string())
      return result(boost::system::in_place_error, std::string(field) + ": expected an array of strings");
    out.emplace_back(s.as_string());
  }
  return out;
}

json::object labels_json(const record::label_list& labels) {
  json::object o;
  for (const auto& [k, v] : labels) o[k] = v;
  return o;
}

json::object totals_object(const control::session_totals& t) {
  return json::object{{"dns_queries", t.dns_queries},
                      {"connections_allowed", t.connections_allowed},
                      {"connections_denied", t.connections_denied},
                      {"bytes_up", t.bytes_up},
                      {"bytes_down", t.bytes_down}};
}

json::object view_json(const session_view& v) {
  json::array sources;
  for (const auto& s : v.sources) sources.emplace_back(s);
  return json::object{{"id", v.id},
                      {"policy", v.policy},
                      {"sources", std::move(sources)},
                      {"labels", labels_json(v.labels)},
                      {"tool_call", v.tool_call.empty() ? json::value(nullptr) : json::value(v.tool_call)},
                      {"runtime", v.runtime},
                      {"netns", v.netns.empty() ? json::value(nullptr) : json::value(v.netns)},
                      {"totals", totals_object(v.totals)}};
}

json::object grant_json(const policy::session_grants::view& g) {
  auto ms = [](auto d) { return std::chrono::duration_cast<std::chrono::milliseconds>(d).count(); };
  return json::object{
      {"id", g.id},
      {"rule", g.rule()},
      {"session", g.session},
      {"allow", g.allow},
      {"tool_call", g.tool_call.empty() ? json::value(nullptr) : json::value(g.tool_call)},
      {"expires_in_ms",
       g.expires_in ? json::value(std::max<std::int64_t>(0, ms(*g.expires_in))) : json::value(nullptr)},
      {"connections_left", g.connections_left ? json::value(*g.connections_left) : json::value(nullptr)},
      {"connections", g.used},
      {"cut", g.cut},
      {"by", g.by.empty() ? json::value(nullptr) : json::value(g.by)}};
}

http_response ok(int status, const json::value& v) {
  return http_response{status, "application/json", json::serialize(v) + "\n"};
}

http_response refused(const registry_error& e) {
  json::array errors;
  for (const auto& m : e.messages) errors.emplace_back(m);
  std::string first = e.messages.empty() ? "refused" : e.messages.front();
  return ok(e.status, json::object{{"error", first}, {"errors", std::move(errors)}});
}

// "/v1/sessions/ID[/rest]" -> (ID, rest)
std::optional<std::pair<std::string, std::string>> session_path(std::string_view target) {
  constexpr std::string_view prefix = "/v1/sessions/";
  if (!target.starts_with(prefix)) return std::nullopt;
  target.remove_prefix(prefix.size());
  const auto slash = target.find('/');
  std::string id(target.substr(0, slash));
  std::string rest(slash == std::string_view::npos ? std::string_view() : target.substr(slash));
  if (id.empty()) return std::nullopt;
  return std::pair{std::move(id), std::move(rest)};
}

http_response handle(control_hooks& h, const http_request& req) {
  std::string_view target = req.target;
  if (auto q = target.find('?'); q != std::string_view::npos) target = target.substr(0, q);
  const auto& m = req.method;

  if (target == "/v1/info" && m == "GET") return http_response{200, "application/json", h.info_json()};
  if (target == "/v1/stats" && m == "GET") {
    const auto s = h.sample();
    return ok(200, json::object{{"active_connections", s.active_connections},
                                {"sessions", s.sessions},
                                {"log_queue_depth", s.log_queue_depth},
                                {"log_dropped_total", s.log_dropped_total},
                                {"decision_watchers", s.decision_watchers},
                                {"approvers", s.approvers},
                                {"approval_holds", s.approval_holds}});
  }
  if (target == "/v1/approvals") {
    if (m != "GET") return json_error(405, "use GET on /v1/approvals");
    auto filter = parse_decisions_query(req.target);
    if (!filter.has_value() || filter->denials_only) {
      const bool deny = filter.has_value();
      return json_error(400, deny ? "unknown parameter 'deny' (expected session)" : filter.error());
    }
    if (!h.approvals || !h.approval_stream) return json_error(404, "this daemon holds nothing for approval");
    http_response streamed{200, "application/x-ndjson", {}};
    streamed.stream = h.approval_stream(filter->session);
    if (!streamed.stream)
      return json_error(503, std::to_string(max_approval_streams) +
                                 " approvers are watching already; end one (airlock approve) and ask again");
    return streamed;
  }
  if (target.starts_with("/v1/approvals/") && target.size() > 14) {
    if (m != "POST") return json_error(405, "use POST on /v1/approvals/ID");
    if (!h.approvals) return json_error(404, "this daemon holds nothing for approval");
    boost::system::error_code ec;
    const auto body = json::parse(req.body, ec);
    if (ec || !body.is_object())
      return json_error(400,
                        "body: expected {\"answer\": \"allow-once\" | \"allow-session\" | \"deny\", \"by\": NAME}");
    std::optional<record::approval_answer> what;
    std::string by;
    for (const auto& kv : body.as_object()) {
      if (kv.key() == "answer" && kv.value().is_string()) {
        what = record::parse_approval_answer(kv.value().as_string());
        if (!what) return json_error(400, "answer: expected allow-once, allow-session or deny");
      } else if (kv.key() == "by" && kv.value().is_string()) {
        by = std::string(kv.value().as_string());
      } else {
        return json_error(400,
                          "unknown field '" + std::string(kv.key()) + "' (expected answer: a string, by: a string)");
      }
    }
    if (!what) return json_error(400, "answer: expected allow-once, allow-session or deny");
    auto done = answer_approval(*h.approvals, h.registry, target.substr(14), *what, std::move(by));
    if (!done.has_value()) return refused(done.error());
    json::object out{{"id", done->id},
                     {"answer", record::to_string(done->what)},
                     {"grant", done->grant.empty() ? json::value(nullptr) : json::value(done->grant)},
                     {"held", done->held}};
    if (!done->refusal.empty()) out["note"] = done->refusal;
    return ok(200, out);
  }
  if (target == "/v1/decisions") {
    if (m != "GET") return json_error(405, "use GET on /v1/decisions");
    auto filter = parse_decisions_query(req.target);
    if (!filter.has_value()) return json_error(400, filter.error());
    http_response streamed{200, "application/x-ndjson", {}};
    streamed.stream = h.decisions(std::move(*filter));
    if (!streamed.stream)
      return json_error(503, std::to_string(max_decision_streams) +
                                 " decision streams are open already; end one (airlock tail) and ask again");
    return streamed;
  }
  if (target == "/v1/reload" && m == "POST") {
    auto snap = h.reload();
    if (!snap.has_value()) return refused(snap.error());
    return ok(200, json::object{{"policy_version", (*snap)->version()}, {"rules", (*snap)->rule_count()}});
  }
  if (target == "/v1/sessions") {
    if (m == "GET") {
      json::array all;
      for (const auto& v : h.registry.list()) all.emplace_back(view_json(v));
      return ok(200, json::object{{"sessions", std::move(all)}});
    }
    if (m == "POST") {
      auto request = parse_session_request(req.body);
      if (!request.has_value()) return json_error(400, request.error());
      auto id = h.registry.add(*request);
      if (!id.has_value()) return refused(id.error());
      return ok(201, json::object{{"id", *id}});
    }
    return json_error(405, "use GET or POST on /v1/sessions");
  }
  if (auto path = session_path(target)) {
    const auto& [id, rest] = *path;
    if (rest.empty() && m == "GET") {
      auto v = h.registry.find(id);
      if (!v) return json_error(404, "no session '" + id + "'");
      return ok(200, view_json(*v));
    }
    if (rest.empty() && m == "DELETE") {
      auto totals = h.registry.remove(id);
      if (!totals.has_value()) return refused(totals.error());
      return ok(200, totals_object(*totals));
    }
    if (rest == "/grants") {
      if (m == "GET") {
        auto all = h.registry.grants_of(id);
        if (!all.has_value()) return refused(all.error());
        json::array out;
        for (const auto& g : *all) out.emplace_back(grant_json(g));
        return ok(200, json::object{{"grants", std::move(out)}});
      }
      if (m == "POST") {
        auto request = parse_grant_request(req.body);
        if (!request.has_value()) return json_error(400, request.error());
        auto added = h.registry.add_grant(id, *request);
        if (!added.has_value()) return refused(added.error());
        return ok(201, grant_json(*added));
      }
      return json_error(405, "use GET or POST on /v1/sessions/ID/grants");
    }
    if (rest.starts_with("/grants/") && rest.size() > 8) {
      if (m != "DELETE") return json_error(405, "use DELETE on /v1/sessions/ID/grants/GRANT");
      const std::string grant = rest.substr(8);
      auto cut = h.registry.revoke_grant(id, grant);
      if (!cut.has_value()) return refused(cut.error());
      return ok(200, json::object{{"id", grant}, {"cut", *cut}});
    }
    if (rest == "/context" && (m == "PUT" || m == "POST")) {
      boost::system::error_code ec;
      const auto body = json::parse(req.body, ec);
      if (ec || !body.is_object())
        return json_error(400, "expected a JSON object {\"tool_call\": ..., \"labels\": {...}}");
      std::string tool_call;
      record::label_list labels;
      if (const auto* t = body.as_object().if_contains("tool_call"); t && !t->is_null()) {
        if (!t->is_string()) return json_error(400, "tool_call: expected a string");
        tool_call = std::string(t->as_string());
      }
      if (const auto* l = body.as_object().if_contains("labels")) {
        auto parsed = labels_of(*l, "labels");
        if (!parsed.has_value()) return json_error(400, parsed.error());
        labels = std::move(*parsed);
      }
      auto done = h.registry.set_context(id, tool_call, labels);
      if (!done.has_value()) return refused(done.error());
      return ok(200, json::object{{"id", id}});
    }
  }
  return json_error(404, "no such endpoint: " + m + " " + std::string(target) + " (see GET /v1/info)");
}

}  // namespace

parse_result parse_session_request(std::string_view body) {
  boost::system::error_code ec;
  const auto v = json::parse(body, ec);
  if (ec) return bad("body is not JSON: " + ec.message());
  if (!v.is_object()) return bad("body: expected a JSON object");
  control::session_request r;
  for (const auto& kv : v.as_object()) {
    const std::string_view key = kv.key();
    const auto& value = kv.value();
    if (key == "id" || key == "policy" || key == "netns") {
      if (!value.is_string()) return bad(std::string(key) + ": expected a string");
      (key == "id" ? r.id : key == "policy" ? r.policy : r.netns) = std::string(value.as_string());
    } else if (key == "sources" || key == "allow") {
      auto list = strings_of(value, key);
      if (!list.has_value()) return bad(list.error());
      (key == "sources" ? r.sources : r.allow) = std::move(*list);
    } else if (key == "labels") {
      auto labels = labels_of(value, key);
      if (!labels.has_value()) return bad(labels.error());
      r.labels = std::move(*labels);
    } else {
      return bad("unknown field '" + std::string(key) + "' (expected id, sources, policy, allow, labels, netns)");
    }
  }
  return r;
}

base::result<grant_request> parse_grant_request(std::string_view body) {
  using result = base::result<grant_request>;
  auto bad = [](std::string message) { return result(boost::system::in_place_error, std::move(message)); };
  boost::system::error_code ec;
  const auto v = json::parse(body, ec);
  if (ec) return bad("body is not JSON: " + ec.message());
  if (!v.is_object()) return bad("body: expected a JSON object");
  grant_request r;
  bool have_allow = false;
  for (const auto& kv : v.as_object()) {
    const std::string_view key = kv.key();
    const auto& value = kv.value();
    if (key == "allow" || key == "by") {
      if (!value.is_string()) return bad(std::string(key) + ": expected a string");
      (key == "allow" ? r.allow : r.by) = std::string(value.as_string());
      have_allow = have_allow || key == "allow";
    } else if (key == "tool_call" || key == "session" || key == "cut") {
      if (!value.is_bool()) return bad(std::string(key) + ": expected true or false");
      (key == "tool_call" ? r.tool_call : key == "session" ? r.session : r.cut) = value.as_bool();
    } else if (key == "for") {
      if (value.is_string()) {
        auto d = policy::parse_duration(value.as_string());
        if (!d.has_value()) return bad("for: " + d.error());
        r.lasts = *d;
      } else if (value.is_number()) {
        const double seconds = value.to_number<double>();
        if (!(seconds > 0 && seconds <= 366.0 * 24 * 3600)) return bad("for: expected seconds above zero");
        r.lasts = std::chrono::milliseconds(static_cast<std::int64_t>(seconds * 1000));
      } else {
        return bad("for: expected seconds or a duration (\"90s\", \"10m\", \"1h\")");
      }
    } else if (key == "connections") {
      if (!value.is_int64() || value.as_int64() < 1 || value.as_int64() > 1'000'000)
        return bad("connections: expected a whole number from 1 to 1000000");
      r.connections = static_cast<std::uint32_t>(value.as_int64());
    } else {
      return bad("unknown field '" + std::string(key) +
                 "' (expected allow, tool_call, session, for, connections, cut, by)");
    }
  }
  if (!have_allow || r.allow.empty()) return bad("allow: expected HOST[:PORT], *.SUFFIX[:PORT] or family:NAME");
  return r;
}

std::string totals_json(const control::session_totals& t) { return json::serialize(totals_object(t)); }

http_handler make_control_handler(control_hooks hooks) {
  return [h = std::move(hooks)](const http_request& req) mutable { return handle(h, req); };
}

}  // namespace airlock::daemon
