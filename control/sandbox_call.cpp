#include "control/sandbox_call.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

namespace airlock::control {
namespace {

namespace json = boost::json;
using base::fail;

json::array strings(const std::vector<std::string>& list) {
  json::array a;
  a.reserve(list.size());
  for (const auto& s : list) a.emplace_back(s);
  return a;
}

// Text in, an object out; anything else (not JSON, not an object) is nothing.
std::optional<json::object> object_of(std::string_view text) {
  boost::system::error_code ec;
  auto v = json::parse(text, ec);
  if (ec || !v.is_object()) return std::nullopt;
  return std::move(v.as_object());
}

std::optional<std::vector<std::string>> strings_of(const json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  if (v == nullptr || !v->is_array()) return std::nullopt;
  std::vector<std::string> out;
  out.reserve(v->as_array().size());
  for (const auto& e : v->as_array()) {
    if (!e.is_string()) return std::nullopt;
    out.emplace_back(e.as_string());
  }
  return out;
}

// A non-negative integer no larger than `max`.
std::optional<std::uint64_t> count_of(const json::object& o, std::string_view key, std::uint64_t max) {
  const auto* v = o.if_contains(key);
  if (v == nullptr) return std::nullopt;
  std::uint64_t n = 0;
  if (v->is_uint64()) n = v->as_uint64();
  else if (v->is_int64() && v->as_int64() >= 0) n = static_cast<std::uint64_t>(v->as_int64());
  else return std::nullopt;
  if (n > max) return std::nullopt;
  return n;
}

json::object call_object(const sandbox_call& call) {
  return {{"args", strings(call.args)}, {"env", strings(call.env)}, {"paths", call.paths}, {"umask", call.umask}};
}

base::result<sandbox_call> call_from(const json::object& o) {
  auto args = strings_of(o, "args");
  auto env = strings_of(o, "env");
  auto paths = count_of(o, "paths", max_call_paths);
  auto umask = count_of(o, "umask", 0777);
  if (!args || !env || !paths || !umask) return fail<sandbox_call>("a sandbox call needs args, env, paths and umask");
  return sandbox_call{std::move(*args), std::move(*env), static_cast<std::size_t>(*paths),
                      static_cast<std::uint32_t>(*umask)};
}

}  // namespace

std::string encode(const sandbox_call& call) { return json::serialize(call_object(call)); }

base::result<sandbox_call> decode_call(std::string_view text) {
  auto o = object_of(text);
  if (!o) return fail<sandbox_call>("a sandbox call is one JSON object");
  return call_from(*o);
}

std::string signal_message(int signal) { return json::serialize(json::object{{"signal", signal}}); }

std::optional<int> decode_signal(std::string_view text) {
  auto o = object_of(text);
  if (!o) return std::nullopt;
  auto n = count_of(*o, "signal", 64);
  if (!n || *n == 0) return std::nullopt;
  return static_cast<int>(*n);
}

std::string exit_message(int status) { return json::serialize(json::object{{"exit", status}}); }

std::string error_message(std::string_view why) { return json::serialize(json::object{{"error", why}}); }

std::optional<call_outcome> decode_outcome(std::string_view text) {
  auto o = object_of(text);
  if (!o) return std::nullopt;
  if (auto n = count_of(*o, "exit", 255)) return call_outcome{static_cast<int>(*n), {}};
  if (const auto* e = o->if_contains("error"); e != nullptr && e->is_string())
    return call_outcome{std::nullopt, std::string(e->as_string())};
  return std::nullopt;
}

std::string encode(const sandbox_order& order) {
  json::array groups;
  for (auto g : order.groups) groups.emplace_back(g);
  return json::serialize(json::object{{"call", call_object(order.call)},
                                      {"uid", order.uid},
                                      {"gid", order.gid},
                                      {"groups", std::move(groups)},
                                      {"user", order.user},
                                      {"control", order.control},
                                      {"state_dir", order.state_dir},
                                      {"pool", order.pool},
                                      {"first_fd", order.first_fd}});
}

base::result<sandbox_order> decode_order(std::string_view text) {
  auto o = object_of(text);
  const auto* call = o ? o->if_contains("call") : nullptr;
  if (call == nullptr || !call->is_object())
    return fail<sandbox_order>("a sandbox order is one JSON object with a call");
  auto c = call_from(call->as_object());
  if (!c) return fail<sandbox_order>(c.error());
  sandbox_order order;
  order.call = std::move(*c);
  constexpr std::uint64_t id_max = 0xFFFFFFFEu;  // (uid_t)-1 means "unchanged" to setresuid
  auto uid = count_of(*o, "uid", id_max), gid = count_of(*o, "gid", id_max);
  auto first_fd = count_of(*o, "first_fd", 1024);
  const auto* user = o->if_contains("user");
  const auto* control = o->if_contains("control");
  const auto* groups = o->if_contains("groups");
  const auto* state_dir = o->if_contains("state_dir");
  const auto* pool = o->if_contains("pool");
  auto is_text = [](const json::value* v) { return v != nullptr && v->is_string(); };
  if (!uid || !gid || !first_fd || *first_fd < 3 || !is_text(user) || !is_text(control) || !is_text(state_dir) ||
      !is_text(pool) || groups == nullptr || !groups->is_array())
    return fail<sandbox_order>("a sandbox order needs uid, gid, groups, user, control, state_dir, pool and first_fd");
  order.uid = static_cast<std::uint32_t>(*uid);
  order.gid = static_cast<std::uint32_t>(*gid);
  for (const auto& g : groups->as_array()) {
    if (!g.is_uint64() && !(g.is_int64() && g.as_int64() >= 0))
      return fail<sandbox_order>("a sandbox order's groups are numbers");
    const auto n = g.is_uint64() ? g.as_uint64() : static_cast<std::uint64_t>(g.as_int64());
    if (n > id_max) return fail<sandbox_order>("a sandbox order's groups are numbers");
    order.groups.push_back(static_cast<std::uint32_t>(n));
  }
  order.user = std::string(user->as_string());
  order.control = std::string(control->as_string());
  order.state_dir = std::string(state_dir->as_string());
  order.pool = std::string(pool->as_string());
  order.first_fd = static_cast<int>(*first_fd);
  return order;
}

}  // namespace airlock::control
