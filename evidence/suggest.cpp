#include "evidence/suggest.hpp"

#include "policy/domain_name.hpp"
#include "policy/families.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

namespace airlock::evidence {
using record::event;
using record::event_kind;
using record::printable;
using record::address_part;
using record::port_part;

namespace {

constexpr std::string_view public_resolvers = "public-resolvers";

// Suffixes under which anyone can get a name (cloud storage, app hosting, CDNs, wildcard
// DNS services): a `*.suffix` there would let a sandbox reach strangers' hosts, so names
// under them are never collapsed. Not exhaustive; three names are still needed elsewhere.
constexpr std::string_view shared_suffixes[] = {"amazonaws.com",
                                                "cloudfront.net",
                                                "githubusercontent.com",
                                                "github.io",
                                                "gitlab.io",
                                                "herokuapp.com",
                                                "appspot.com",
                                                "googleapis.com",
                                                "googleusercontent.com",
                                                "web.app",
                                                "firebaseapp.com",
                                                "windows.net",
                                                "azurewebsites.net",
                                                "azureedge.net",
                                                "cloudapp.net",
                                                "workers.dev",
                                                "pages.dev",
                                                "cloudflarestorage.com",
                                                "trycloudflare.com",
                                                "vercel.app",
                                                "netlify.app",
                                                "fly.dev",
                                                "onrender.com",
                                                "ngrok.io",
                                                "ngrok-free.app",
                                                "glitch.me",
                                                "repl.co",
                                                "surge.sh",
                                                "fastly.net",
                                                "akamaized.net",
                                                "digitaloceanspaces.com",
                                                "backblazeb2.com",
                                                "blogspot.com",
                                                "wordpress.com",
                                                "nip.io",
                                                "sslip.io"};

// Second-level labels that make a two-label suffix public (co.uk, com.au, ...).
constexpr std::string_view public_second_levels[] = {"co", "com", "net", "org",  "gov", "edu", "ac",  "or", "ne",
                                                     "go", "mil", "gob", "gouv", "ltd", "plc", "sch", "nic"};

bool under(std::string_view name, std::string_view suffix) {
  return name.size() > suffix.size() && name.ends_with(suffix) && name[name.size() - suffix.size() - 1] == '.';
}

bool shared(std::string_view suffix) {
  return std::any_of(std::begin(shared_suffixes), std::end(shared_suffixes),
                     [&](std::string_view s) { return suffix == s || under(suffix, s); });
}

std::vector<std::string_view> labels_of(std::string_view name) {
  std::vector<std::string_view> out;
  for (std::size_t start = 0;;) {
    const auto dot = name.find('.', start);
    out.push_back(name.substr(start, dot - start));
    if (dot == std::string_view::npos) return out;
    start = dot + 1;
  }
}

// At least two labels, an alphabetic top-level label, and not a public second level such
// as co.uk: something a single owner plausibly holds.
bool registrable_looking(std::string_view suffix) {
  const auto labels = labels_of(suffix);
  if (labels.size() < 2) return false;
  const auto tld = labels.back();
  if (tld.empty() || !std::all_of(tld.begin(), tld.end(), [](char c) { return c >= 'a' && c <= 'z'; })) return false;
  if (labels.size() == 2 && tld.size() == 2 &&
      std::find(std::begin(public_second_levels), std::end(public_second_levels), labels[0]) !=
          std::end(public_second_levels))
    return false;
  return true;
}

bool rule_matches(const policy::rule_config& r, std::string_view name) {
  if (r.type == policy::rule_config::kind::host) return r.pattern == name;
  if (r.type == policy::rule_config::kind::wildcard) return under(name, r.pattern);
  return false;  // regex and cidr entries are not used by the shipped families
}

bool has_port(const policy::rule_config& r, std::uint16_t port) {
  return r.ports.empty() || std::find(r.ports.begin(), r.ports.end(), port) != r.ports.end();
}

bool default_ports(const std::set<std::uint16_t>& ports) {
  return std::all_of(ports.begin(), ports.end(), [](auto p) { return p == 80 || p == 443; });
}

first_seen first_of(const event& e) {
  first_seen f;
  f.ts = e.ts;
  if (e.process)
    f.process = e.process->unknown.empty() ? e.process->lineage() : "an unknown process (" + e.process->unknown + ")";
  return f;
}

struct use {
  std::set<std::uint16_t> ports;  // from connections; empty when the name was only asked in DNS
  first_seen first;
};

class suggester {
 public:
  suggestion run(const std::vector<event>& events) {
    load_resolvers();
    std::map<std::string, std::string, std::less<>> answered;  // address -> name, for connections without one
    for (const auto& e : events) {
      if (s_.session.empty()) s_.session = e.session;
      if (e.kind == event_kind::session && e.action == "open") answered.clear();
      if (!e.is_decision()) continue;
      ++s_.decisions;
      if (e.verdict == "allow") ++s_.allowed;
      else if (e.verdict == "audit-deny") ++s_.audit_denied;
      else ++s_.denied;
      if (e.kind == event_kind::dns) {
        for (const auto& a : e.answers) answered[a] = e.name;
        consider(e, e.name, std::nullopt);
        continue;
      }
      std::string name = e.name;
      if (name.empty() || policy::is_ip_literal(name)) {
        const auto it = answered.find(address_part(e.dst));
        if (it == answered.end()) {
          nameless(e);
          continue;
        }
        name = it->second;
      }
      consider(e, name, port_part(e.dst));
    }
    for (const auto& [name, why] : hard_) used_.erase(name);
    for (const auto& [name, why] : soft_)
      if (!used_.count(name) && !hard_.count(name)) hard_.emplace(name, why);
    for (const auto& [what, why] : hard_) s_.left_out.push_back({what, why});
    choose_families();
    collapse();
    for (auto& [name, u] : used_) s_.allow.push_back(exact(name, u));
    std::sort(s_.allow.begin(), s_.allow.end(), [](const auto& a, const auto& b) { return a.host < b.host; });
    return std::move(s_);
  }

 private:
  void load_resolvers() {
    if (auto f = policy::load_family(public_resolvers); f.has_value()) resolvers_ = std::move(f->deny);
  }

  bool public_resolver(const event& e, std::string_view name) const {
    if (e.rule.starts_with("<family public-resolvers>")) return true;
    return std::any_of(resolvers_.begin(), resolvers_.end(), [&](const auto& r) { return rule_matches(r, name); });
  }

  void nameless(const event& e) {
    const std::string what = e.dst.empty() ? "(no destination)" : e.dst;
    if (e.reason == "private_address")
      hard_.emplace(what, "private_address: a special address (loopback, private, metadata, ...)");
    else if (e.verdict == "allow")
      hard_.emplace(what, "no name: allowed by " + e.rule + "; keep a cidr rule for it yourself if it is needed");
    else hard_.emplace(what, "no name: no SNI or Host, and no DNS answer of this session gave this address");
  }

  void consider(const event& e, const std::string& raw, std::optional<std::uint16_t> port) {
    if (raw.empty()) return;
    auto parsed = policy::domain_name::parse(raw);
    if (!parsed.has_value() || e.reason == "invalid_name") {
      hard_.emplace(printable(raw), "invalid_name: not a valid host name");
      return;
    }
    const std::string name = parsed->str();
    if (e.reason == "private_address") {
      hard_.insert_or_assign(
          name, "private_address: it resolves only to special addresses (loopback, private, metadata, ...)");
      return;
    }
    if (name == "use-application-dns.net" || e.has_note("doh_canary")) {
      hard_.emplace(name, "doh_canary: Firefox's DoH canary is always answered NXDOMAIN, so DNS stays with airlock");
      return;
    }
    if (public_resolver(e, name)) {
      hard_.emplace(name, "public-resolvers: a DoH/DoT resolver would take DNS past airlock");
      return;
    }
    if (e.verdict != "allow" && e.reason == "host_denied") {
      hard_.emplace(name, "host_denied: a deny rule (" + e.rule +
                              ") denies it; remove that rule first if it is really needed");
      return;
    }
    if (e.verdict != "allow" && e.reason == "protocol_not_allowed") {
      // Soft: a name also used as its port carries stays suggested for that use.
      soft_.emplace(name, "protocol_not_allowed: what was sent there is not what the port carries (TLS naming the host "
                          "on 443, a request naming it on 80); widen the port with {port: N, protocol: any} only if "
                          "that traffic is really wanted");
      return;
    }
    const bool policy_can_fix = e.verdict == "allow" || e.reason == "host_not_allowed" ||
                                e.reason == "port_not_allowed" || e.reason == "no_name";
    if (!policy_can_fix) {
      soft_.emplace(name, e.reason + ": a policy change would not have let it through");
      return;
    }
    auto [it, fresh] = used_.try_emplace(name);
    auto& u = it->second;
    if (fresh) u.first = first_of(e);
    // DNS lines often have no process; the first line of the name that has one names it.
    else if (u.first.process.empty() && e.process) u.first.process = first_of(e).process;
    if (port) u.ports.insert(*port);
  }

  // A used name goes to the first family with a rule for it; the family is included, and
  // the name stays an explicit entry only for ports the family does not give it.
  void choose_families() {
    for (auto family_name : policy::family_names()) {
      if (family_name == public_resolvers) continue;
      auto f = policy::load_family(family_name);
      if (!f.has_value() || f->allow.empty()) continue;
      suggested_family chosen;
      chosen.name = std::string(family_name);
      for (auto it = used_.begin(); it != used_.end();) {
        auto& [name, u] = *it;
        std::vector<const policy::rule_config*> rules;
        for (const auto& r : f->allow)
          if (rule_matches(r, name)) rules.push_back(&r);
        if (rules.empty()) {
          ++it;
          continue;
        }
        if (chosen.hosts.empty() || u.first.ts < chosen.first.ts) chosen.first = u.first;
        chosen.hosts.push_back(name);
        std::erase_if(u.ports, [&](auto port) {
          return std::any_of(rules.begin(), rules.end(), [&](const auto* r) { return has_port(*r, port); });
        });
        // Only asked in DNS, or every port it used is the family's: nothing left to add.
        const bool dns_only_or_covered = u.ports.empty();
        it = dns_only_or_covered ? used_.erase(it) : std::next(it);
      }
      if (!chosen.hosts.empty()) s_.families.push_back(std::move(chosen));
    }
  }

  // Three or more names under one registrable-looking suffix become `*.suffix`, longest
  // suffix first, and never over a name that was left out on purpose.
  void collapse() {
    std::map<std::string, std::set<std::string>> by_suffix;
    for (const auto& [name, u] : used_) {
      const auto labels = labels_of(name);
      std::string_view rest = name;
      for (std::size_t i = 0; i + 2 < labels.size(); ++i) {  // every suffix of two labels or more
        rest.remove_prefix(labels[i].size() + 1);
        if (registrable_looking(rest) && !shared(rest)) by_suffix[std::string(rest)].insert(name);
      }
    }
    std::vector<std::string> suffixes;
    for (const auto& [suffix, names] : by_suffix)
      if (names.size() >= 3) suffixes.push_back(suffix);
    std::sort(suffixes.begin(), suffixes.end(), [](const auto& a, const auto& b) {
      const auto la = std::count(a.begin(), a.end(), '.'), lb = std::count(b.begin(), b.end(), '.');
      return la != lb ? la > lb : a < b;
    });
    for (const auto& suffix : suffixes) {
      std::vector<std::string> members;
      for (const auto& n : by_suffix[suffix])
        if (used_.count(n)) members.push_back(n);
      if (members.size() < 3) continue;
      const bool over_left_out = std::any_of(s_.left_out.begin(), s_.left_out.end(),
                                             [&](const auto& l) { return l.what == suffix || under(l.what, suffix); });
      if (over_left_out) continue;
      suggested_rule r;
      r.host = "*." + suffix;
      std::set<std::uint16_t> ports;
      for (const auto& n : members) {
        const auto& u = used_.at(n);
        ports.insert(u.ports.begin(), u.ports.end());
        if (r.members.empty() || u.first.ts < r.first.ts) r.first = u.first;
        r.members.push_back(n);
        used_.erase(n);
      }
      if (!default_ports(ports)) r.ports.assign(ports.begin(), ports.end());
      s_.allow.push_back(std::move(r));
    }
  }

  static suggested_rule exact(const std::string& name, const use& u) {
    suggested_rule r;
    r.host = name;
    if (!default_ports(u.ports)) r.ports.assign(u.ports.begin(), u.ports.end());
    r.first = u.first;
    return r;
  }

  suggestion s_;
  std::map<std::string, use> used_;
  std::map<std::string, std::string> hard_;  // never suggested, whatever else happened
  std::map<std::string, std::string> soft_;  // not suggested unless the name was also used
  std::vector<policy::rule_config> resolvers_;
};

std::string seen(const first_seen& f) {
  std::string out = "first seen " + printable(f.ts.empty() ? "?" : f.ts);
  if (!f.process.empty()) out += " by " + printable(f.process);
  return out;
}

std::string port_list(const std::vector<std::uint16_t>& ports) {
  std::string out = "[";
  for (std::size_t i = 0; i < ports.size(); ++i) out += (i ? ", " : "") + std::to_string(ports[i]);
  return out + "]";
}

}  // namespace

suggestion suggest(const std::vector<event>& events) { return suggester().run(events); }

std::string render_yaml(const suggestion& s, std::string_view log_path) {
  std::string out;
  out += "# airlock suggest: session " + printable(s.session) + ", from " + printable(log_path) + "\n";
  out += "# The smallest policy that would have allowed what this session did (" + std::to_string(s.decisions) +
         " decisions: " + std::to_string(s.allowed) + " allowed, " + std::to_string(s.denied) + " denied, " +
         std::to_string(s.audit_denied) + " audit-denied).\n";
  out += "# Review it before use: nothing has been applied. Put the policy under your config's\n";
  out += "# `policies:` and bind it in `sessions:`; with `version: 1` in front this file checks as is.\n";
  out += "policies:\n";
  out += "  " + s.policy_name + ":\n";
  if (!s.families.empty()) {
    std::string names;
    for (const auto& f : s.families) {
      std::string hosts;
      for (const auto& h : f.hosts) hosts += (hosts.empty() ? "" : ", ") + h;
      out += "    # " + f.name + " (service family) covers " + hosts + "; " + seen(f.first) + "\n";
      names += (names.empty() ? "" : ", ") + f.name;
    }
    out += "    include: [" + names + "]\n";
  }
  if (!s.allow.empty() || s.families.empty()) {
    out += s.allow.empty() ? "    allow: []\n" : "    allow:\n";
    for (const auto& r : s.allow) {
      if (!r.members.empty()) {
        std::string members;
        for (const auto& m : r.members) members += (members.empty() ? "" : ", ") + m;
        out += "      # collapsed " + std::to_string(r.members.size()) + " names into " + r.host + ": " + members +
               "\n";
      }
      out += "      # " + seen(r.first) + "\n";
      out += "      - host: " + (r.host.starts_with('*') ? "\"" + r.host + "\"" : r.host) + "\n";
      if (!r.ports.empty()) out += "        ports: " + port_list(r.ports) + "\n";
    }
  }
  if (!s.left_out.empty()) {
    out += "# not suggested:\n";
    for (const auto& l : s.left_out) out += "#   " + printable(l.what) + " (" + printable(l.why) + ")\n";
  }
  return out;
}

}  // namespace airlock::evidence
