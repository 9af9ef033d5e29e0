// `airlock grant`: give a session a grant, list its grants, or revoke one, through the
// running daemon's control API (POST/GET/DELETE /v1/sessions/ID/grants).
#include "app/cli.hpp"
#include "app/launcher_flags.hpp"
#include "control/api_call.hpp"

#include <boost/json/serialize.hpp>

#include <cstdio>

namespace airlock::app {
namespace {

namespace http = boost::beast::http;
namespace json = boost::json;

std::string text_of(const json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  return v && v->is_string() ? std::string(v->as_string()) : std::string();
}

// "g1 files.example.org until tool call call-41 ends, 2 connections so far"
std::string describe(const json::object& g) {
  std::string out = text_of(g, "id") + " " + text_of(g, "allow");
  std::vector<std::string> scope;
  if (auto call = text_of(g, "tool_call"); !call.empty()) scope.push_back("until tool call " + call + " ends");
  if (const auto* ms = g.if_contains("expires_in_ms"); ms && ms->is_int64())
    scope.push_back("for " + std::to_string((ms->as_int64() + 999) / 1000) + " s more");
  if (const auto* n = g.if_contains("connections_left"); n && (n->is_int64() || n->is_uint64()))
    scope.push_back("for " + json::serialize(*n) + " more connections");
  if (scope.empty()) scope.push_back("until the session ends");
  for (std::size_t i = 0; i < scope.size(); ++i) out += (i == 0 ? " " : ", or ") + scope[i];
  if (const auto* used = g.if_contains("connections")) out += "; " + json::serialize(*used) + " connections so far";
  if (const auto* cut = g.if_contains("cut"); cut && cut->is_bool() && !cut->as_bool()) out += "; not cut when it ends";
  return out;
}

int print(const json::value& v, bool as_json, const std::string& text) {
  const std::string out = as_json ? json::serialize(v) + "\n" : text + "\n";
  std::fwrite(out.data(), 1, out.size(), stdout);
  return exit_ok;
}

}  // namespace

int run_grant_command(args a) {
  arg_reader r("grant", a);
  const auto socket = control_socket(r);
  const auto revoke = r.value("", "--revoke");
  const bool list = r.flag("--list");
  const bool tool_call = r.flag("--tool-call");
  const bool for_session = r.flag("--for-session");
  const auto lasts = r.value("", "--for");
  const auto connections = r.value("", "--connections");
  const bool no_cut = r.flag("--no-cut");
  const auto by = r.value("", "--by");
  const bool as_json = r.flag("--json");
  const auto rest = r.positionals();
  if (r.failed()) return r.usage_error();

  const bool adding = !list && !revoke;
  if (list && revoke) r.fail("--list and --revoke: one at a time");
  else if (rest.size() != (adding ? 2u : 1u))
    r.fail(adding ? "expected SESSION and what to allow (HOST[:PORT], *.SUFFIX[:PORT] or family:NAME)"
                  : "expected one SESSION");
  if (adding && !tool_call && !for_session && !lasts && !connections)
    r.fail("say how long the grant lasts: --tool-call, --for DURATION, --connections N or --for-session");
  if (!adding && (tool_call || for_session || lasts || connections || no_cut || by))
    r.fail("--tool-call, --for, --connections, --for-session, --no-cut and --by are for giving a grant");
  json::object body;
  if (connections) {
    try {
      std::size_t used = 0;
      const long n = std::stol(*connections, &used);
      if (used != connections->size() || n < 1 || n > 1'000'000) throw std::invalid_argument("range");
      body["connections"] = n;
    } catch (const std::exception&) {
      r.fail("--connections: expected a whole number from 1 to 1000000, not '" + *connections + "'");
    }
  }
  if (r.failed()) return r.usage_error();

  const std::string base = "/v1/sessions/" + rest[0] + "/grants";
  if (list) {
    auto answer = control::api_call(socket, http::verb::get, base);
    if (!answer.has_value()) {
      std::fprintf(stderr, "airlock grant: %s\n", answer.error().c_str());
      return exit_error;
    }
    std::string text;
    if (const auto* all = answer->is_object() ? answer->as_object().if_contains("grants") : nullptr;
        all && all->is_array())
      for (const auto& g : all->as_array())
        if (g.is_object()) text += (text.empty() ? "" : "\n") + describe(g.as_object());
    if (text.empty()) text = "session " + rest[0] + " holds no grants";
    return print(*answer, as_json, text);
  }
  if (revoke) {
    auto answer = control::api_call(socket, http::verb::delete_, base + "/" + *revoke);
    if (!answer.has_value()) {
      std::fprintf(stderr, "airlock grant: %s\n", answer.error().c_str());
      return exit_error;
    }
    const auto* cut = answer->is_object() ? answer->as_object().if_contains("cut") : nullptr;
    return print(*answer, as_json,
                 "revoked " + *revoke + ": " + (cut ? json::serialize(*cut) : std::string("0")) +
                     " open connections cut");
  }
  body["allow"] = rest[1];
  if (tool_call) body["tool_call"] = true;
  if (for_session) body["session"] = true;
  if (lasts) body["for"] = *lasts;
  if (no_cut) body["cut"] = false;
  if (by) body["by"] = *by;
  auto answer = control::api_call(socket, http::verb::post, base, json::serialize(body));
  if (!answer.has_value()) {
    std::fprintf(stderr, "airlock grant: %s\n", answer.error().c_str());
    return exit_error;
  }
  const auto& g = answer->is_object() ? answer->as_object() : json::object();
  return print(*answer, as_json, "granted " + describe(g) + " (rule " + text_of(g, "rule") + ")");
}

}  // namespace airlock::app
