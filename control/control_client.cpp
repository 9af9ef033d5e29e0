// The control API client: one short exchange per call (control/api_call.hpp); blocking,
// since the launcher has nothing else to do meanwhile.
#include "control/session_api.hpp"

#include "control/api_call.hpp"

#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

namespace airlock::control {
namespace {

namespace http = boost::beast::http;
namespace json = boost::json;

using base::fail;

std::uint64_t number(const json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  if (!v) return 0;
  if (v->is_uint64()) return v->as_uint64();
  if (v->is_int64() && v->as_int64() >= 0) return static_cast<std::uint64_t>(v->as_int64());
  return 0;
}

class control_client final : public session_api {
 public:
  explicit control_client(std::string path) : path_(std::move(path)) {}

  result<json::value> call(http::verb method, const std::string& target, const std::string& body = {}) {
    return api_call(path_, method, target, body);
  }

  result<listener_ports> listeners() override {
    auto info = call(http::verb::get, "/v1/info");
    if (!info.has_value()) return info.error();
    return listeners_from_info(json::serialize(*info));
  }

  result<std::string> register_session(const session_request& r) override {
    json::object body;
    if (!r.id.empty()) body["id"] = r.id;
    json::array sources, allow;
    for (const auto& s : r.sources) sources.emplace_back(s);
    for (const auto& a : r.allow) allow.emplace_back(a);
    body["sources"] = std::move(sources);
    if (!r.policy.empty()) body["policy"] = r.policy;
    if (!r.allow.empty()) body["allow"] = std::move(allow);
    json::object labels;
    for (const auto& [k, v] : r.labels) labels[k] = v;
    body["labels"] = std::move(labels);
    if (!r.netns.empty()) body["netns"] = r.netns;
    auto answer = call(http::verb::post, "/v1/sessions", json::serialize(body));
    if (!answer.has_value()) return fail<std::string>(answer.error());
    const auto* id = answer->is_object() ? answer->as_object().if_contains("id") : nullptr;
    if (!id || !id->is_string()) return fail<std::string>("control API: the answer has no session id");
    return result<std::string>(boost::system::in_place_value, id->as_string());
  }

  result<session_totals> remove_session(const std::string& id) override {
    auto answer = call(http::verb::delete_, "/v1/sessions/" + id);
    if (!answer.has_value()) return answer.error();
    if (!answer->is_object()) return fail<session_totals>("control API: totals are not an object");
    const auto& o = answer->as_object();
    return session_totals{number(o, "dns_queries"), number(o, "connections_allowed"), number(o, "connections_denied"),
                          number(o, "bytes_up"), number(o, "bytes_down")};
  }

  result<void> set_context(const std::string& id, const std::string& tool_call,
                           const std::vector<std::pair<std::string, std::string>>& labels) override {
    json::object body{{"tool_call", tool_call}};
    json::object l;
    for (const auto& [k, v] : labels) l[k] = v;
    body["labels"] = std::move(l);
    auto answer = call(http::verb::put, "/v1/sessions/" + id + "/context", json::serialize(body));
    if (!answer.has_value()) return answer.error();
    return {};
  }

 private:
  std::string path_;
};

}  // namespace

result<std::unique_ptr<session_api>> connect_control(const std::string& socket_path) {
  auto client = std::make_unique<control_client>(socket_path);
  // Asking for the listeners proves a daemon answers there (and is needed anyway).
  auto probe = client->listeners();
  if (!probe.has_value()) return probe.error();
  return std::unique_ptr<session_api>(std::move(client));
}

}  // namespace airlock::control
