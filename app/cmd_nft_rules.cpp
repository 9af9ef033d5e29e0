#include "app/cli.hpp"
#include "launcher/nft_rules.hpp"

#include <charconv>
#include <cstdio>

namespace airlock::app {
namespace {

std::optional<std::uint16_t> port_of(const std::optional<std::string>& text, std::uint16_t fallback) {
  if (!text) return fallback;
  unsigned v = 0;
  auto [end, ec] = std::from_chars(text->data(), text->data() + text->size(), v);
  if (ec != std::errc{} || end != text->data() + text->size() || v < 1 || v > 65535) return std::nullopt;
  return static_cast<std::uint16_t>(v);
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
  if (auto rest = r.positionals(); !rest.empty()) r.fail("unexpected argument '" + rest.front() + "'");
  if (!iface) r.fail("--iface IFACE is required");
  if (!proxy || !dns || !https) r.fail("ports must be numbers 1..65535");
  if (r.failed()) return r.usage_error();
  g.iface = *iface;
  g.proxy_port = *proxy;
  g.dns_port = *dns;
  g.https_port = *https;
  if (table) g.table = *table;
  auto text = launcher::render(g);
  if (!text.has_value()) {
    std::fprintf(stderr, "airlock nft-rules: %s\n", text.error().c_str());
    return exit_usage;
  }
  std::fputs(text->c_str(), stdout);
  return exit_ok;
}

}  // namespace airlock::app
