#include "app/cli.hpp"
#include "launcher/nft_rules.hpp"

#include <charconv>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>

#include <pwd.h>

namespace airlock::app {
namespace {

std::optional<std::uint16_t> port_of(const std::optional<std::string>& text, std::uint16_t fallback) {
  if (!text) return fallback;
  unsigned v = 0;
  auto [end, ec] = std::from_chars(text->data(), text->data() + text->size(), v);
  if (ec != std::errc{} || end != text->data() + text->size() || v < 1 || v > 65535) return std::nullopt;
  return static_cast<std::uint16_t>(v);
}

// A uid given as a number or a user name.
std::optional<std::uint32_t> uid_of(const std::string& text) {
  std::uint32_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec == std::errc{} && end == text.data() + text.size()) return v;
  if (const passwd* pw = ::getpwnam(text.c_str())) return pw->pw_uid;
  return std::nullopt;
}

}  // namespace

int run_nft_rules_command(args a) {
  arg_reader r("nft-rules", a);
  launcher::gateway_rules g;
  const auto iface = r.value("", "--iface");
  const auto proxy = port_of(r.value("", "--proxy-port"), g.proxy_port);
  const auto dns = port_of(r.value("", "--dns-port"), g.dns_port);
  const auto https = port_of(r.value("", "--https-port"), 0);
  const auto table = r.value("", "--table");
  g.tproxy = r.flag("--tproxy");
  const bool sidecar = r.flag("--sidecar");
  const auto uid_text = r.value("", "--uid");
  if (auto rest = r.positionals(); !rest.empty()) r.fail("unexpected argument '" + rest.front() + "'");
  if (!proxy || !dns || !https) r.fail("ports must be numbers 1..65535");
  std::optional<std::uint32_t> uid;
  if (sidecar) {
    if (iface) r.fail("--iface is for the gateway table; --sidecar steers the namespace's own traffic");
    if (g.tproxy) r.fail("--tproxy is for the gateway table; the sidecar's is REDIRECT in the output hook");
    if (!uid_text) r.fail("--sidecar needs --uid UID: the user airlock runs as, whose traffic goes out as it is");
    else if (!(uid = uid_of(*uid_text))) r.fail("--uid " + *uid_text + ": neither a number nor a known user");
  } else {
    if (!iface) r.fail("--iface IFACE is required (or --sidecar --uid UID)");
    if (uid_text) r.fail("--uid is for --sidecar");
  }
  if (r.failed()) return r.usage_error();
  base::result<std::string> text;
  if (sidecar) {
    launcher::sidecar_rules s{.airlock_uid = *uid, .proxy_port = *proxy, .dns_port = *dns, .https_port = *https};
    if (table) s.table = *table;
    text = launcher::render(s);
  } else {
    g.iface = *iface;
    g.proxy_port = *proxy;
    g.dns_port = *dns;
    g.https_port = *https;
    if (table) g.table = *table;
    text = launcher::render(g);
  }
  if (!text.has_value()) {
    std::fprintf(stderr, "airlock nft-rules: %s\n", text.error().c_str());
    return exit_usage;
  }
  std::fputs(text->c_str(), stdout);
  return exit_ok;
}

}  // namespace airlock::app
