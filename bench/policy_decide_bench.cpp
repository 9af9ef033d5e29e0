// Policy engine benchmark (issue 3, "Benchmark"): compiled_policy::decide() at 10, 1k and
// 100k rules, its cost against the number of labels in the name, snapshot::compile() and
// load_config_text() times, and heap bytes per compiled rule. bench/README.md has the method
// and the latest table; run it from the release preset (-O2, -DAIRLOCK_BENCH=ON):
//
//   ./policy_decide_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
//
// Rule sets are generated (fixed seed, so every run sees the same names) and built as
// airlock::policy::config structs; only the load_config_text case goes through YAML.
#include "policy/config.hpp"
#include "policy/domain_name.hpp"
#include "policy/snapshot.hpp"

#include <benchmark/benchmark.h>
#include <malloc.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_set>
#include <utility>
#include <vector>

namespace {

using airlock::policy::config;
using airlock::policy::domain_name;
using airlock::policy::policy_config;
using airlock::policy::rule_config;
using airlock::policy::snapshot;

constexpr std::string_view policy_name = "bench";
constexpr std::string_view rules_file = "bench.yaml";
constexpr std::uint16_t query_port = 443;
// Every decide case cycles through this many distinct pre-parsed names, so a run touches
// many buckets of a large index instead of one hot cache line ("hot" cases use one name).
constexpr std::size_t query_pool = 1024;
constexpr std::size_t regex_rules = 100;

// Regex rules (rule_config::kind::regex) are being added by issue 3; the regex cases
// compile and register themselves once the enumerator exists, with no flag to flip.
template <typename Kind>
concept has_regex_kind = requires {
  Kind::regex;
};
constexpr bool regex_supported = has_regex_kind<rule_config::kind>;

template <typename Kind>
Kind regex_kind() {
  return Kind::regex;
}

// ---------------------------------------------------------------------------------------
// Names

class name_maker {
 public:
  explicit name_maker(std::uint64_t seed) : rng_(seed) {}

  std::size_t below(std::size_t n) { return std::uniform_int_distribution<std::size_t>(0, n - 1)(rng_); }

  // A pronounceable label of 4-10 letters ("kobarite"), sometimes with a digit suffix.
  std::string org() {
    static constexpr std::string_view consonants = "bcdfghklmnprstvz";
    static constexpr std::string_view vowels = "aeiou";
    std::string s;
    const std::size_t len = 4 + below(7);
    for (std::size_t i = 0; i < len; ++i)
      s += i % 2 == 0 ? consonants[below(consonants.size())] : vowels[below(vowels.size())];
    if (below(4) == 0) s += std::to_string(below(100));
    return s;
  }

  std::string_view sub() {
    static constexpr std::string_view subs[] = {
        "api",   "cdn",    "static", "registry", "files", "download", "mirror",  "pkg",    "repo",     "auth",
        "login", "assets", "media",  "img",      "docs",  "git",      "objects", "raw",    "packages", "index",
        "proxy", "edge",   "eu",     "us",       "ap",    "prod",     "v2",      "upload", "gw",       "s3"};
    return subs[below(std::size(subs))];
  }

  std::string_view tld() {
    static constexpr std::string_view tlds[] = {"com", "com", "com", "net", "org", "io", "dev", "de", "co", "cloud"};
    return tlds[below(std::size(tlds))];
  }

  // "org.tld", "sub.org.tld" or "sub.sub.org.tld".
  std::string host(std::size_t labels) {
    std::string s = org() + "." + std::string(tld());
    for (std::size_t i = 2; i < labels; ++i) s = std::string(sub()) + "." + s;
    return s;
  }

 private:
  std::mt19937_64 rng_;
};

domain_name parse(const std::string& text) {
  auto n = domain_name::parse(text);
  if (!n) throw std::runtime_error("bench: generated an invalid name: " + text);
  return *n;
}

// ---------------------------------------------------------------------------------------
// Workloads

struct workload {
  config cfg;
  std::vector<std::string> exact;       // allow exact names
  std::vector<std::string> wildcards;   // allow wildcard suffixes (without "*.")
  std::vector<std::string> regex_ids;   // "pkgN" of each regex rule, for hits
  std::unordered_set<std::string> all;  // every exact name and suffix, to keep misses misses
  std::shared_ptr<const snapshot> snap;
  const airlock::policy::compiled_policy* policy = nullptr;
};

rule_config make_rule(rule_config::kind type, std::string pattern, std::vector<std::uint16_t> ports, int line) {
  rule_config r;
  r.type = type;
  r.pattern = std::move(pattern);
  r.ports = std::move(ports);
  r.mark = {std::string(rules_file), line, 7};
  return r;
}

// `rules` name rules in all: 99% allow and 1% deny (at least one, so both rule sets are
// probed as in a real policy), each 70% exact names of 2-4 labels and 30% "*.suffix" with a
// suffix of 2-3 labels. Allow rules take ports [80, 443] (the loader's default), deny rules
// every port. With `with_regex`, 100 regex allow rules come on top.
config generate(std::size_t rules, bool with_regex, workload* out) {
  name_maker gen(0x61726c6f636bULL + rules);
  config cfg;
  cfg.file = std::string(rules_file);
  cfg.decisions_log = "-";
  policy_config p;
  p.name = std::string(policy_name);
  p.mark = {std::string(rules_file), 3, 3};
  std::unordered_set<std::string> seen;
  const std::size_t deny = std::max<std::size_t>(1, rules / 100);
  int line = 10;
  for (std::size_t i = 0; i < rules; ++i) {
    const bool is_deny = i >= rules - deny;
    const bool wildcard = gen.below(10) < 3;
    std::string name;
    do name = gen.host(wildcard ? 2 + gen.below(2) : 2 + gen.below(3));
    while (!seen.insert(name).second);
    auto r = make_rule(wildcard ? rule_config::kind::wildcard : rule_config::kind::host, name,
                       is_deny ? std::vector<std::uint16_t>{} : std::vector<std::uint16_t>{80, 443}, line++);
    if (is_deny) {
      p.deny.push_back(std::move(r));
    } else {
      if (out) (wildcard ? out->wildcards : out->exact).push_back(name);
      p.allow.push_back(std::move(r));
    }
  }
  if constexpr (regex_supported) {
    if (with_regex) {
      for (std::size_t i = 0; i < regex_rules; ++i) {
        const std::string id = "pkg" + std::to_string(i);
        // One RE2 pattern per rule, e.g. ^[a-z0-9-]+\.pkg7\.example\.test$
        p.allow.push_back(make_rule(regex_kind<rule_config::kind>(), "^[a-z0-9-]+\\." + id + "\\.example\\.test$",
                                    {80, 443}, line++));
        if (out) out->regex_ids.push_back(id);
      }
    }
  }
  if (out) out->all = std::move(seen);
  cfg.policies.push_back(std::move(p));
  cfg.default_policy = std::string(policy_name);
  return cfg;
}

// snapshot::compile() returns the snapshot, or (since regex rules) a result that can hold
// errors; this takes either, and a failed compile ends the run.
template <typename Result>
std::shared_ptr<const snapshot> unwrap(Result&& r) {
  if constexpr (std::is_convertible_v<Result, std::shared_ptr<const snapshot>>) {
    return std::forward<Result>(r);
  } else {
    if (!r) {
      for (const auto& e : r.error()) std::fprintf(stderr, "bench: compile: %s\n", e.to_string().c_str());
      std::abort();
    }
    return *std::forward<Result>(r);
  }
}

std::shared_ptr<const snapshot> compile(const config& cfg) { return unwrap(snapshot::compile(cfg)); }

const airlock::policy::compiled_policy& compiled(workload& w) {
  if (!w.snap) {
    w.snap = compile(w.cfg);
    w.policy = w.snap->find_policy(policy_name);
    if (!w.policy) throw std::runtime_error("bench: compiled snapshot has no policy 'bench'");
  }
  return *w.policy;
}

// Built once per (rules, regex) and kept: generating 100k rules costs more than running
// one case, and it happens before any timed loop.
workload& get_workload(std::size_t rules, bool with_regex) {
  static std::map<std::pair<std::size_t, bool>, std::unique_ptr<workload>> cache;
  auto& slot = cache[{rules, with_regex}];
  if (!slot) {
    slot = std::make_unique<workload>();
    slot->cfg = generate(rules, with_regex, slot.get());
  }
  compiled(*slot);
  return *slot;
}

// ---------------------------------------------------------------------------------------
// Queries

enum class query_kind { exact_hit, wildcard_depth1, wildcard_depth3, miss, regex_hit };

std::string_view to_string(query_kind k) {
  switch (k) {
    case query_kind::exact_hit: return "exact_hit";
    case query_kind::wildcard_depth1: return "wildcard_depth1";
    case query_kind::wildcard_depth3: return "wildcard_depth3";
    case query_kind::miss: return "miss";
    case query_kind::regex_hit: return "regex_hit";
  }
  return "?";
}

// A name of exactly `labels` labels that no exact rule names and no wildcard covers.
std::string miss_name(name_maker& gen, const workload& w, std::size_t labels) {
  for (;;) {
    std::string s = gen.host(std::min<std::size_t>(labels, 2));
    while (std::count(s.begin(), s.end(), '.') + 1 < static_cast<std::ptrdiff_t>(labels))
      s = std::string(gen.sub()) + std::to_string(gen.below(1000)) + "." + s;
    bool covered = w.all.contains(s);
    for (auto dot = s.find('.'); !covered && dot != std::string::npos; dot = s.find('.', dot + 1))
      covered = w.all.contains(s.substr(dot + 1));
    if (!covered) return s;
  }
}

// `count` pre-parsed names of one kind; `labels` only for misses (0: 3 labels).
std::vector<domain_name> make_queries(const workload& w, query_kind kind, std::size_t count, std::size_t labels = 0) {
  name_maker gen(0x7175657279ULL + static_cast<std::uint64_t>(kind) * 131 + labels);
  std::vector<domain_name> out;
  out.reserve(count);
  for (std::size_t i = 0; i < count; ++i) {
    switch (kind) {
      case query_kind::exact_hit: out.push_back(parse(w.exact[gen.below(w.exact.size())])); break;
      case query_kind::wildcard_depth1:
        out.push_back(parse(std::string(gen.sub()) + "." + w.wildcards[gen.below(w.wildcards.size())]));
        break;
      case query_kind::wildcard_depth3:
        out.push_back(parse(std::string(gen.sub()) + "." + gen.org() + "." + std::string(gen.sub()) + "." +
                            w.wildcards[gen.below(w.wildcards.size())]));
        break;
      case query_kind::miss: out.push_back(parse(miss_name(gen, w, labels == 0 ? 3 : labels))); break;
      case query_kind::regex_hit:
        out.push_back(parse(gen.org() + "." + w.regex_ids[gen.below(w.regex_ids.size())] + ".example.test"));
        break;
    }
  }
  return out;
}

// The verdict each kind must get; checked once per case so a bench never times the wrong path.
void check(const airlock::policy::compiled_policy& p, const std::vector<domain_name>& qs, query_kind kind) {
  const bool want_allow = kind != query_kind::miss;
  for (const auto& q : qs) {
    if (p.decide(q, query_port).allowed() != want_allow) {
      std::fprintf(stderr, "bench: %s query %s got the wrong verdict\n", std::string(to_string(kind)).c_str(),
                   q.str().c_str());
      std::abort();
    }
  }
}

void run_decide(benchmark::State& state, const airlock::policy::compiled_policy& p,
                const std::vector<domain_name>& qs) {
  const std::size_t mask = qs.size() - 1;  // size is a power of two
  std::size_t i = 0;
  for (auto _ : state) {
    auto d = p.decide(qs[i++ & mask], query_port);
    benchmark::DoNotOptimize(d);
  }
  state.SetItemsProcessed(state.iterations());
}

void register_decide(std::size_t rules, query_kind kind, bool with_regex, std::size_t pool, std::size_t labels = 0) {
  std::string name = "decide/" + std::string(to_string(kind));
  if (labels != 0) name += "/labels:" + std::to_string(labels);
  name += "/rules:" + std::to_string(rules);
  if (with_regex) name += "+regex:" + std::to_string(regex_rules);
  if (pool == 1) name += "/hot";
  benchmark::RegisterBenchmark(name.c_str(), [=](benchmark::State& state) {
    auto& w = get_workload(rules, with_regex);
    const auto& p = compiled(w);
    const auto qs = make_queries(w, kind, pool, labels);
    check(p, qs, kind);
    run_decide(state, p, qs);
  });
}

// ---------------------------------------------------------------------------------------
// Compile, load, memory

std::size_t heap_in_use() {
  const auto m = mallinfo2();
  return m.uordblks + m.hblkhd;  // small chunks in the arena + large mmapped ones
}

void bm_compile(benchmark::State& state) {
  const auto rules = static_cast<std::size_t>(state.range(0));
  const config cfg = generate(rules, false, nullptr);
  for (auto _ : state) {
    auto s = compile(cfg);
    benchmark::DoNotOptimize(s.get());
    state.PauseTiming();  // freeing the snapshot is not part of building it
    s.reset();
    state.ResumeTiming();
  }
  state.counters["rules"] = static_cast<double>(rules);
}

std::string yaml_text(const config& cfg) {
  std::string y = "version: 1\npolicies:\n  bench:\n";
  for (const auto* list : {&cfg.policies[0].allow, &cfg.policies[0].deny}) {
    y += list == &cfg.policies[0].allow ? "    allow:\n" : "    deny:\n";
    for (const auto& r : *list) {
      y += r.type == rule_config::kind::wildcard ? "      - host: \"*." + r.pattern + "\"\n"
                                                 : "      - host: " + r.pattern + "\n";
      if (list == &cfg.policies[0].allow) y += "        ports: [80, 443]\n";
    }
  }
  y += "default_policy: bench\n";
  return y;
}

void bm_load_yaml(benchmark::State& state) {
  const auto rules = static_cast<std::size_t>(state.range(0));
  const std::string text = yaml_text(generate(rules, false, nullptr));
  {
    // The loader may add built-in deny rules of its own to every policy (the public
    // resolvers), so only the allow list must come back exactly as generated.
    const config want = generate(rules, false, nullptr);
    auto r = airlock::policy::load_config_text(text, std::string(rules_file));
    if (!r) {
      for (const auto& e : r.error()) std::fprintf(stderr, "bench: load: %s\n", e.to_string().c_str());
      std::abort();
    }
    if (r->policies.size() != 1 || r->policies[0].allow.size() != want.policies[0].allow.size() ||
        r->policies[0].deny.size() < want.policies[0].deny.size()) {
      std::fprintf(stderr, "bench: the generated YAML did not load as %zu rules\n", rules);
      std::abort();
    }
  }
  for (auto _ : state) {
    auto r = airlock::policy::load_config_text(text, std::string(rules_file));
    benchmark::DoNotOptimize(r);
  }
  state.counters["rules"] = static_cast<double>(rules);
  state.counters["yaml_bytes"] = static_cast<double>(text.size());
}

// Heap growth across one compile, divided by the rule count: what a loaded policy costs
// at run time. The config's own size (the loader's output, freed or kept by the caller)
// is reported apart as config_bytes_per_rule.
void bm_memory(benchmark::State& state) {
  const auto rules = static_cast<std::size_t>(state.range(0));
  double per_rule = 0, config_per_rule = 0;
  for (auto _ : state) {
    const std::size_t before_config = heap_in_use();
    const config cfg = generate(rules, false, nullptr);
    const std::size_t before = heap_in_use();
    auto s = compile(cfg);
    const std::size_t after = heap_in_use();
    benchmark::DoNotOptimize(s.get());
    per_rule = static_cast<double>(after - before) / static_cast<double>(rules);
    config_per_rule = static_cast<double>(before - before_config) / static_cast<double>(rules);
  }
  state.counters["bytes_per_rule"] = per_rule;
  state.counters["config_bytes_per_rule"] = config_per_rule;
  state.counters["rules"] = static_cast<double>(rules);
}

void register_all() {
  constexpr std::size_t sizes[] = {10, 1'000, 100'000};
  for (auto rules : sizes)
    for (auto kind :
         {query_kind::exact_hit, query_kind::wildcard_depth1, query_kind::wildcard_depth3, query_kind::miss})
      register_decide(rules, kind, false, query_pool);
  // One name over and over: everything it touches stays in cache, as for a sandbox that
  // talks to one registry all day. The pool cases above pay the misses of a cold index.
  for (auto kind : {query_kind::exact_hit, query_kind::wildcard_depth1, query_kind::wildcard_depth3, query_kind::miss})
    register_decide(100'000, kind, false, 1);
  // Cost against labels at the largest size (misses: every lookup is made, nothing ends early).
  for (std::size_t labels : {std::size_t{2}, std::size_t{4}, std::size_t{8}}) {
    register_decide(100'000, query_kind::miss, false, query_pool, labels);
    register_decide(100'000, query_kind::miss, false, 1, labels);
  }
  if constexpr (regex_supported) {
    for (auto rules : sizes)
      for (auto kind : {query_kind::exact_hit, query_kind::wildcard_depth1, query_kind::miss, query_kind::regex_hit})
        register_decide(rules, kind, true, query_pool);
  }

  benchmark::RegisterBenchmark("compile/snapshot", bm_compile)->Arg(100'000)->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("compile/load_config_text", bm_load_yaml)
      ->Arg(1'000)
      ->Arg(10'000)
      ->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("memory/compile", bm_memory)->Arg(100'000)->Iterations(1)->Unit(benchmark::kMillisecond);
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  if (!regex_supported)
    std::fprintf(stderr, "policy_decide_bench: rule_config::kind::regex does not exist yet; regex cases skipped\n");
  register_all();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
