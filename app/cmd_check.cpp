// `airlock check` and `airlock test`: the policy, asked offline.
#include "app/cli.hpp"
#include "policy/config.hpp"
#include "policy/host_port.hpp"
#include "policy/snapshot.hpp"

#include <boost/asio/ip/address.hpp>

#include <charconv>
#include <cstdio>

namespace airlock::app {
namespace {

policy::config_result load(const std::optional<std::string>& path) {
  return path ? policy::load_config_file(*path) : policy::load_default_config();
}

int report_errors(const std::vector<policy::config_error>& errors) {
  for (const auto& e : errors) std::fprintf(stderr, "%s\n", e.to_string().c_str());
  std::fprintf(stderr, "%zu error%s\n", errors.size(), errors.size() == 1 ? "" : "s");
  return exit_usage;
}

}  // namespace

int run_check_command(args a) {
  arg_reader r("check", a);
  const auto path = r.value("-c", "--config");
  const bool print_default = r.flag("--print-default");
  if (auto rest = r.positionals(); !rest.empty()) r.fail("unexpected argument '" + rest.front() + "'");
  if (r.failed()) return r.usage_error();
  if (print_default) {
    const auto text = policy::default_config_text();
    std::fwrite(text.data(), 1, text.size(), stdout);
    return exit_ok;
  }
  auto cfg = load(path);
  if (!cfg.has_value()) return report_errors(cfg.error());
  auto compiled = policy::snapshot::compile(*cfg);
  if (!compiled.has_value()) return report_errors(compiled.error());
  const auto& snap = *compiled;
  std::printf("ok: %s: %zu polic%s, %zu rules, %zu sessions, version %s\n", cfg->file.c_str(), snap->policy_count(),
              snap->policy_count() == 1 ? "y" : "ies", snap->rule_count(), snap->session_count(),
              snap->version().c_str());
  return exit_ok;
}

int run_test_command(args a) {
  arg_reader r("test", a);
  const auto path = r.value("-c", "--config");
  const auto policy_name = r.value("", "--policy");
  const auto speaks = r.value("", "--speaks");
  const auto rest = r.positionals();
  if (!policy_name) r.fail("--policy NAME is required");
  if (rest.size() != 1) r.fail("expected exactly one HOST[:PORT]");
  auto spoken = policy::wire::unjudged;
  if (speaks) {
    if (*speaks == "tls") spoken = policy::wire::tls;
    else if (*speaks == "http") spoken = policy::wire::http;
    else if (*speaks == "opaque") spoken = policy::wire::opaque;
    else r.fail("--speaks: '" + *speaks + "'; expected tls, http or opaque");
  }
  if (r.failed()) return r.usage_error();
  const auto target = policy::parse_host_port(rest.front());
  if (!target) {
    std::fprintf(stderr, "airlock test: '%s' is not HOST[:PORT] (port 1..65535; IPv6 as [ADDR]:PORT)\n",
                 rest.front().c_str());
    return exit_usage;
  }
  auto cfg = load(path);
  if (!cfg.has_value()) return report_errors(cfg.error());
  auto compiled = policy::snapshot::compile(*cfg);
  if (!compiled.has_value()) return report_errors(compiled.error());
  const auto& snap = *compiled;
  const auto* p = snap->find_policy(*policy_name);
  if (!p) {
    std::fprintf(stderr, "airlock test: no policy named '%s' in %s\n", policy_name->c_str(), cfg->file.c_str());
    return exit_usage;
  }
  policy::decision d;
  boost::system::error_code ec;
  const auto address = boost::asio::ip::make_address(target->host, ec);
  if (!ec) {
    d = p->decide(address, target->port.value_or(443), spoken);
  } else if (auto name = policy::domain_name::parse(target->host); name.has_value()) {
    d = p->decide(*name, target->port.value_or(443), spoken);
  } else {
    d = {policy::verdict::deny, policy::reason::invalid_name, "default"};
  }
  std::printf("%s %s %.*s", policy::to_string(d.verdict).data(), policy::to_string(d.reason).data(),
              static_cast<int>(d.rule.size()), d.rule.data());
  // What the allowing rule lets be spoken on the port: a name allowed on 443 is TLS naming it.
  if (d.allowed()) std::printf(" protocol=%s", policy::to_string(d.protocol).data());
  std::printf("\n");
  return d.verdict == policy::verdict::deny ? 1 : 0;
}

}  // namespace airlock::app
