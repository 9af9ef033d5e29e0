// The instance as its operators see it: the admin port (/metrics, /healthz) and what the
// control socket's routes (control_api.cpp) ask of the instance: its info, its stats, a reload.
#include "daemon/control_api.hpp"
#include "daemon/decision_stream.hpp"
#include "daemon/http_server.hpp"
#include "daemon/instance_parts.hpp"

#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

#include <string_view>

namespace airlock::daemon {

metrics_sample instance::parts::sample() const {
  metrics_sample out{proxy_ctx->limits.open(), sessions->list().size(), log->queue_depth(), log->dropped_total()};
  out.overload_level = static_cast<int>(overload.level());
  out.memory_pressure = overload.pressure();
  out.accept_pauses = accept_pauses.load();
  out.accept_paused_us = accept_paused_us.load();
  out.decision_watchers = feed->watchers();
  out.approvers = approvals->approvers();
  out.approval_holds = approvals->holds();
  if (minter) {
    out.leaf_hits = minter->hits();
    out.leaf_minted = minter->misses();
    out.leaf_evicted = minter->evictions();
  }
  return out;
}

namespace {

std::string info_json(const parts_t& r) {
  namespace json = boost::json;
  auto endpoints = [](const std::vector<policy::endpoint_config>& eps) {
    json::array out;
    for (const auto& ep : eps) out.emplace_back(json::object{{"address", ep.address.to_string()}, {"port", ep.port}});
    return out;
  };
  const auto snap = r.policies->current();
  return json::serialize(json::object{{"version", AIRLOCK_VERSION_STRING},
                                      {"policy_version", snap->version()},
                                      {"config", r.cfg.file},
                                      {"proxy", endpoints(r.proxy_bound)},
                                      {"tproxy", endpoints(r.tproxy_bound)},
                                      {"http_proxy", endpoints(r.explicit_bound)},
                                      {"dns", endpoints(r.dns_bound)},
                                      {"admin", endpoints(r.admin_bound)},
                                      {"decisions_log", r.log_path},
                                      {"inspection_ca", inspection_ca(r.cfg)}}) +
         "\n";
}

http_response admin(parts_t& r, const http_request& req) {
  std::string_view path = req.target;
  if (auto q = path.find('?'); q != std::string_view::npos) path = path.substr(0, q);
  if (req.method != "GET" && req.method != "HEAD") return json_error(405, "GET only");
  if (path == "/metrics")
    return http_response{200, "text/plain; version=0.0.4; charset=utf-8", r.stats.render(r.sample())};
  if (path == "/healthz") {
    // Healthy while the loop answers and the proxy is accepting; draining is not healthy.
    if (r.stopping) return http_response{503, "text/plain", "stopping\n"};
    return http_response{200, "text/plain", "ok\n"};
  }
  return json_error(404, "no such endpoint; try /metrics or /healthz");
}

}  // namespace

void start_admin_and_control(parts_t& r) {
  for (auto& a : r.admin_acceptors)
    co_spawn(r.io, serve_http(a, [&r](const http_request& req) { return admin(r, req); }), report("admin listener"));
  if (r.control)
    co_spawn(
        r.io,
        serve_http(
            r.control->acceptor,
            make_control_handler(control_hooks{
                *r.sessions, [&r] { return reload(r); }, [&r] { return info_json(r); }, [&r] { return r.sample(); },
                [&r](record::feed_filter f) { return stream_decisions(r.io.get_executor(), *r.feed, std::move(f)); },
                r.approvals.get(),
                [&r](std::string session) {
                  return stream_approvals(r.io.get_executor(), *r.approvals, std::move(session));
                }})),
        report("control listener"));
}

}  // namespace airlock::daemon
