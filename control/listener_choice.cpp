// Which of a daemon's listeners a sandbox's redirect goes to: shared by the embedded
// daemon (its bound endpoints) and the control API client (GET /v1/info), pure.
#include "control/session_api.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>

namespace airlock::control {

namespace asio = boost::asio;
namespace {

namespace json = boost::json;

// The first endpoint a REDIRECTed packet can arrive at (nft REDIRECT rewrites the
// destination to the receiving interface's address: a wildcard or a non-loopback
// address will do, loopback will not), else the first one at all.
std::uint16_t first_port(const std::vector<bound_endpoint>& eps, bool& reachable) {
  for (const auto& ep : eps)
    if (!ep.address.is_loopback()) {
      reachable = true;
      return ep.port;
    }
  return eps.empty() ? 0 : eps.front().port;
}

// The {"address", "port"} objects of info[key] that name an address and a usable port.
std::vector<bound_endpoint> endpoints(const json::object& info, std::string_view key) {
  std::vector<bound_endpoint> out;
  const auto* list = info.if_contains(key);
  if (!list || !list->is_array()) return out;
  for (const auto& ep : list->as_array()) {
    if (!ep.is_object()) continue;
    const auto* addr = ep.as_object().if_contains("address");
    const auto* port = ep.as_object().if_contains("port");
    if (!addr || !addr->is_string() || !port) continue;
    std::uint64_t p = 0;
    if (port->is_uint64()) p = port->as_uint64();
    else if (port->is_int64() && port->as_int64() > 0) p = static_cast<std::uint64_t>(port->as_int64());
    if (p == 0 || p > 65535) continue;
    boost::system::error_code ec;
    auto a = boost::asio::ip::make_address(std::string(addr->as_string()), ec);
    if (ec) a = boost::asio::ip::address_v4::loopback();  // unreadable: never counted as reachable
    out.push_back({a, static_cast<std::uint16_t>(p)});
  }
  return out;
}

}  // namespace

listener_ports choose_listeners(const std::vector<bound_endpoint>& proxy, const std::vector<bound_endpoint>& dns) {
  listener_ports out;
  bool proxy_ok = false, dns_ok = false;
  out.proxy = first_port(proxy, proxy_ok);
  out.dns = first_port(dns, dns_ok);
  out.reachable_from_sandbox = proxy_ok && dns_ok;
  if (proxy_ok) {
    // The sandbox's rules send :443 of both families to the one https port, and IPv6
    // listeners are v6-only: the port must be held on every family the proxy port is, or
    // HTTPS of the other family would be refused.
    auto families = [&](std::uint16_t port) {
      unsigned f = 0;
      for (const auto& ep : proxy)
        if (!ep.address.is_loopback() && ep.port == port) f |= ep.address.is_v4() ? 1u : 2u;
      return f;
    };
    const unsigned needed = families(out.proxy);
    for (const auto& ep : proxy)
      if (!ep.address.is_loopback() && ep.port != out.proxy && ep.port != out.dns &&
          (families(ep.port) & needed) == needed) {
        out.https = ep.port;
        break;
      }
  }
  return out;
}

result<listener_ports> listeners_from_info(std::string_view info_json) {
  boost::system::error_code ec;
  const json::value info = json::parse(info_json, ec);
  if (ec || !info.is_object())
    return result<listener_ports>(boost::system::in_place_error, "control API: /v1/info is not a JSON object");
  const auto& o = info.as_object();
  auto out = choose_listeners(endpoints(o, "proxy"), endpoints(o, "dns"));
  if (const auto* log = o.if_contains("decisions_log"); log && log->is_string())
    out.decisions_log = std::string(log->as_string());
  if (const auto* ca = o.if_contains("inspection_ca"); ca && ca->is_string())
    out.inspection_ca = std::string(ca->as_string());
  return out;
}

}  // namespace airlock::control
