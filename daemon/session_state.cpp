#include "daemon/session_state.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

namespace airlock::daemon {

namespace json = boost::json;

namespace {

constexpr std::int64_t format_version = 1;

json::array strings(const std::vector<std::string>& v) {
  json::array out;
  for (const auto& s : v) out.emplace_back(s);
  return out;
}

using failure = base::result<std::vector<persisted_session>>;

bool read_strings(const json::object& o, std::string_view key, std::vector<std::string>& out) {
  const auto* v = o.if_contains(key);
  if (v == nullptr) return true;
  if (!v->is_array()) return false;
  for (const auto& item : v->as_array()) {
    if (!item.is_string()) return false;
    out.emplace_back(item.as_string());
  }
  return true;
}

bool read_string(const json::object& o, std::string_view key, std::string& out) {
  const auto* v = o.if_contains(key);
  if (v == nullptr || v->is_null()) return true;
  if (!v->is_string()) return false;
  out = v->as_string();
  return true;
}

}  // namespace

std::string sessions_to_json(const std::vector<persisted_session>& sessions) {
  json::array list;
  for (const auto& s : sessions) {
    json::object labels;
    for (const auto& [k, v] : s.request.labels) labels[k] = v;
    list.emplace_back(json::object{{"id", s.request.id},
                                   {"sources", strings(s.request.sources)},
                                   {"policy", s.request.policy},
                                   {"allow", strings(s.request.allow)},
                                   {"labels", std::move(labels)},
                                   {"netns", s.request.netns},
                                   {"tool_call", s.tool_call}});
  }
  return json::serialize(json::object{{"version", format_version}, {"sessions", std::move(list)}}) + "\n";
}

base::result<std::vector<persisted_session>> sessions_from_json(std::string_view text) {
  boost::system::error_code ec;
  const auto doc = json::parse(text, ec);
  if (ec) return failure(boost::system::in_place_error, "not JSON: " + ec.message());
  const auto* root = doc.if_object();
  const auto* version = root ? root->if_contains("version") : nullptr;
  if (version == nullptr || !version->is_int64() || version->as_int64() != format_version)
    return failure(boost::system::in_place_error, "not a version 1 sessions file");
  const auto* list = root->if_contains("sessions");
  if (list == nullptr || !list->is_array()) return failure(boost::system::in_place_error, "no \"sessions\" list");
  std::vector<persisted_session> out;
  for (const auto& item : list->as_array()) {
    const auto* o = item.if_object();
    persisted_session s;
    const std::string where = "session " + std::to_string(out.size() + 1);
    if (o == nullptr || !read_string(*o, "id", s.request.id) || s.request.id.empty() ||
        !read_strings(*o, "sources", s.request.sources) || !read_string(*o, "policy", s.request.policy) ||
        !read_strings(*o, "allow", s.request.allow) || !read_string(*o, "netns", s.request.netns) ||
        !read_string(*o, "tool_call", s.tool_call))
      return failure(boost::system::in_place_error, where + ": malformed");
    if (const auto* labels = o->if_contains("labels")) {
      if (!labels->is_object()) return failure(boost::system::in_place_error, where + ": labels: not an object");
      for (const auto& [k, v] : labels->as_object()) {
        if (!v.is_string()) return failure(boost::system::in_place_error, where + ": labels: not strings");
        s.request.labels.emplace_back(std::string(k), std::string(v.as_string()));
      }
    }
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace airlock::daemon
