#!/usr/bin/env python3
"""report.py RESULTS_DIR                      markdown tables of one bench/run
   report.py --update-readme README RESULTS_DIR  the same, between the markers in README

Every figure is the median over the rounds of the run; every ratio is taken within a
round (target / baseline measured minutes apart in the same round), then the median of
those. A round whose foreign CPU (busy time of processes that are not ours: the other
builds on a shared machine) exceeds FOREIGN_MAX % is left out of medians and ratios when a
clean round remains; "n" in the detail tables says clean/total.
"""
import csv
import os
import re
import statistics
import sys
from collections import defaultdict

from figures import fmt, med  # bench/lib

import inspect_tables  # bench/lib: the inspect scenario's table

FOREIGN_MAX = float(os.environ.get("FOREIGN_MAX", "15"))
PROXIES = ["direct", "floor", "airlock", "airlock-tproxy", "haproxy", "nginx", "squid"]
RESOLVERS = ["auth", "unbound", "dnsmasq", "dnsdist", "airlock"]
BEGIN = "<!-- bench/run table: begin (written by bench/run --update-readme) -->"
END = "<!-- bench/run table: end -->"

# scenario -> (metric, what it is, CPU unit or None, higher is better)
ROWS = [
    ("https", "rps", "new HTTPS connections/s (wrk -c32, Connection: close)", "req", True),
    ("http", "rps", "new HTTP connections/s (wrk -c32, Connection: close)", "req", True),
    ("bulk", "MiBps", "single-stream TLS download, MiB/s (curl, one file)", "GiB", True),
    ("bulk-tcp", "MiBps", "single-stream opaque TCP download, MiB/s (raw stream, no TLS or HTTP)", "GiB", True),
    ("latency-https", "p50_ms", "HTTPS p50 ms at concurrency 1 (connect+TLS+request)", None, False),
    ("latency-https", "p99_ms", "HTTPS p99 ms at concurrency 1", None, False),
    ("latency-https", "p50_handshake_ms", "  of which the TLS handshake (p50 ms)", None, False),
    ("latency-http", "p50_ms", "HTTP p50 ms at concurrency 1", None, False),
    ("latency-http", "p99_ms", "HTTP p99 ms at concurrency 1", None, False),
    ("latency-http", "p50_first_byte_ms", "  HTTP p50 ms from request sent to first byte", None, False),
    ("idle", "proxy_kib_per_conn", "KiB of proxy RSS per idle TLS connection (5,000 held)", None, False),
    ("hello-whole", "answered_per_s", "ClientHello→ServerHello/s, hello in 1 segment (c=64)", "hello", True),
    ("hello-segmented", "answered_per_s", "the same, hello in 8 segments 2 ms apart", "hello", True),
    ("hello-segmented", "p99_ms", "  its p99 ms to the ServerHello", None, False),
    ("hello-slow", "answered_per_s", "slow hellos (16 segments 100 ms apart, c=500) answered/s", "hello", True),
    ("hello-slow", "p99_ms", "  their p99 ms to the ServerHello (1.5 s of it is the trickle)", None, False),
]
DNS_ROWS = [
    ("dns-hit", "qps", "queries/s, cache hits (1,000 allowed names, asked before)"),
    ("dns-miss", "qps", "queries/s, cache misses (allowed names never asked before)"),
    ("dns-denied", "qps", "queries/s, denied names (on no allowlist)"),
    ("dns-hit", "proxy_cpu_us_per_query", "resolver CPU µs per query, hits"),
    ("dns-miss", "proxy_cpu_us_per_query", "resolver CPU µs per query, misses"),
    ("dns-denied", "proxy_cpu_us_per_query", "resolver CPU µs per query, denied"),
]


def load(d):
    data = defaultdict(lambda: defaultdict(lambda: defaultdict(dict)))
    with open(os.path.join(d, "raw.tsv")) as f:
        for r in csv.DictReader(f, delimiter="\t"):
            try:
                v = float(r["value"])
            except (TypeError, ValueError):
                continue
            if v == v:
                data[r["scenario"]][r["target"]][r["metric"]][r["round"]] = v
    return data


class Scenario:
    def __init__(self, sd):
        self.sd = sd

    def clean(self, t):
        f = self.sd.get(t, {}).get("foreign_pct", {})
        return {r for r, v in f.items() if v <= FOREIGN_MAX}

    def rounds(self, t, m):
        """(values, clean count, total) preferring clean rounds"""
        v = self.sd.get(t, {}).get(m, {})
        if "foreign_pct" not in self.sd.get(t, {}):  # not CPU-accounted: every round counts
            return list(v.values()), len(v), len(v)
        c = self.clean(t) & set(v)
        return [v[r] for r in (c or v)], len(c), len(v)

    def med(self, t, m):
        return med(self.rounds(t, m)[0])

    def paired(self, t, base, m, diff=False):
        a, b = self.sd.get(t, {}).get(m, {}), self.sd.get(base, {}).get(m, {})
        common = set(a) & set(b)
        clean = common & self.clean(t) & self.clean(base)
        use = clean or common
        if diff:
            return med([a[r] - b[r] for r in use])
        return med([a[r] / b[r] for r in use if b[r]])


def table(hdr, rows, align=None):
    out = ["| " + " | ".join(hdr) + " |", "|" + "|".join(align or ["---"] + ["---:"] * (len(hdr) - 1)) + "|"]
    return out + ["| " + " | ".join(r) + " |" for r in rows]


def ratio_cell(v, *ratios):
    parts = [f"{r:.2f}" if r == r else "–" for r in ratios]
    if v != v:
        return "–"
    if all(p == "–" for p in parts):
        return fmt(v)
    return f"{fmt(v)} ({', '.join(parts)})"


def proxies_in(data):
    """The targets this run measured, in the usual order (direct always)."""
    return [t for t in PROXIES if t == "direct" or any(t in data[sc] for sc in data)]


def headline(data):
    proxies = proxies_in(data)
    rows = []
    for sc, m, what, _, _ in ROWS + [(s, "rps", f"new HTTP connections/s at concurrency {s[7:]} (wrk)", "req", True)
                                     for s in scale_levels(data)]:
        if sc not in data or not any(m in data[sc][t] for t in data[sc]):
            continue
        S = Scenario(data[sc])
        row = [what]
        for t in proxies:
            v = S.med(t, m)
            if sc == "idle" and t == "direct":
                v = S.med(t, "origin_kib_per_conn")
                row.append(fmt(v) if v == v else "–")
                continue
            rd = S.paired(t, "direct", m) if t != "direct" else float("nan")
            rh = S.paired(t, "haproxy", m) if t not in ("direct", "haproxy") else float("nan")
            row.append(ratio_cell(v, rd, rh))
        rows.append(row)
    if "latency-https" in data or "latency-http" in data:
        for sc in ("latency-https", "latency-http"):
            if sc not in data:
                continue
            S = Scenario(data[sc])
            for m in ("p50_ms", "p99_ms"):
                added = {t: S.paired(t, "direct", m, diff=True) for t in proxies if t != "direct"}
                rows.append([f"{sc[8:].upper()} {m[:3]} ms added over direct"] +
                            ["–" if t == "direct" or added[t] != added[t] else f"{added[t]:+.3f}" for t in proxies])
    return table(["scenario: median (× direct, × HAProxy)"] + proxies, rows)


def scale_levels(data):
    return sorted((s for s in data if s.startswith("scale-c")), key=lambda s: int(s[7:]))


def dns_table(data):
    rows = []
    for sc, m, what in DNS_ROWS:
        if sc not in data:
            continue
        S = Scenario(data[sc])
        row = [what]
        for t in RESOLVERS:
            v = S.med(t, m)
            if m == "qps":
                row.append(ratio_cell(v, S.paired(t, "unbound", m) if t != "unbound" else float("nan")))
            else:
                row.append(fmt(v))
        rows.append(row)
    return table(["DNS: median (× unbound)"] + RESOLVERS, rows)


def cpu_table(data):
    proxies = proxies_in(data)[1:]
    rows = []
    for sc, _, what, unit, _ in ROWS + [(s, "", f"HTTP at concurrency {s[7:]}", "req", True) for s in scale_levels(data)]:
        if not unit or sc not in data or any(r[0].startswith(sc + " ") for r in rows):
            continue
        S = Scenario(data[sc])
        m = f"proxy_cpu_us_per_{unit}"
        label = {"req": "µs per request", "GiB": "s per GiB", "hello": "µs per hello"}[unit]
        row = [f"{sc} ({label})"]
        for t in proxies:
            v = S.med(t, m)
            row.append(fmt(v / 1e6 if unit == "GiB" else v))
        o = S.med("direct", f"server_cpu_us_per_{unit}")
        row.append(fmt(o / 1e6 if unit == "GiB" else o))
        rows.append(row)
    return table(["proxy CPU (all threads/processes)"] + proxies + ["origin, direct"], rows)


def decide_table(data):
    if "decide" not in data:
        return []
    sd = data["decide"]
    sizes = sorted(sd, key=lambda s: int(s.split(":")[1]))
    kinds = ["exact_hit_ns", "wildcard_depth1_ns", "wildcard_depth3_ns", "miss_ns"]
    rows = [[k[:-3].replace("_", " ")] + [fmt(med(list(sd[s].get(k, {}).values()))) for s in sizes] for k in kinds]
    return table(["decide() ns, pool of 1,024 names"] + [s.replace("rules:", "") + " rules" for s in sizes], rows)


STARTUP = [  # target, what, budget over `true` (issue 9)
    ("true", "`true`", None),
    ("airlock --version", "`airlock --version` (the binary's own start: loading, no sandbox)", None),
    ("bwrap", "bubblewrap floor (`bwrap --ro-bind / / --unshare-pid true`)", None),
    ("netns", "network namespace floor (`ip netns add` + `ip netns del`)", None),
    ("daemon", "`airlock run -- true`, a daemon running", 30),
    ("embedded", "`airlock run -- true`, the embedded daemon", 100),
]


def startup_tables(data):
    """the launcher's start-up: medians, the per-round difference to `true`, the budget"""
    if "startup" not in data:
        return []
    S = Scenario(data["startup"])
    rows = []
    for t, what, budget in STARTUP:
        v = list(data["startup"].get(t, {}).get("ms", {}).values())
        if not v:
            continue
        over = S.paired(t, "true", "ms", diff=True) if t != "true" else float("nan")
        spread = statistics.quantiles(v, n=10) if len(v) >= 2 else [v[0]] * 9
        verdict = ""
        if budget is not None and over == over:
            verdict = f"{budget} ms: " + ("met" if over <= budget else "**missed**")
        rows.append([what, fmt(med(v)), f"{over:+.1f}" if over == over else "", f"{spread[0]:.1f}..{spread[-1]:.1f}",
                     str(len(v)), verdict])
    out = table(["command (all through `nsenter --net`)", "median ms", "over `true`, ms", "p10..p90 ms", "runs",
                 "budget over `true`"], rows, ["---", "---:", "---:", "---:", "---:", "---"])
    load = data.get("startup-load", {}).get("all", {})
    if load:
        g = lambda m: load.get(m, {}).get("1", float("nan"))
        out += ["", f"While the rounds ran: load average {g('loadavg_start'):.2f} at the start, {g('loadavg_end'):.2f} "
                    f"at the end; the CPUs {g('busy_pct'):.0f} % busy (this benchmark included)."]
    steps = data.get("startup-steps", {}).get("daemon", {})
    if steps:
        out += ["", "Where a run with the daemon spends its time (`AIRLOCK_TIMINGS=1`, medians of "
                    f"{max(len(v) for v in steps.values())} runs; after the binary has started):", ""]
        out += table(["step", "ms"], [[k, f"{med(list(v.values())):.2f}"] for k, v in steps.items()])
    loop = data.get("startup-loop", {}).get("daemon", {})
    if loop:
        g = lambda m: loop.get(m, {}).get("1", float("nan"))
        left = {k: g(k) for k in ("left_netns_or_cgroup", "left_veth", "left_nft", "left_records")}
        n = g("runs") + g("failed")
        out += ["", f"{n:,.0f} runs of `airlock run --pids 64 -- true` in a row: {g('seconds'):.1f} s "
                    f"({g('seconds') * 1000 / max(1, n):.1f} ms each), {g('failed'):.0f} failed; left behind: "
                    + ("nothing (no namespace pin, cgroup, veth, nft table or record)" if not any(left.values()) else
                       ", ".join(f"{k[5:]} {v:.0f}" for k, v in left.items()))
                    + "."]
    return out


def details(data):
    out = []
    for sc in sorted(data):
        if sc == "decide" or sc.startswith("startup"):
            continue
        sd = data[sc]
        S = Scenario(sd)
        metrics = [m for m in ("rps", "MiBps", "qps", "answered_per_s", "p50_ms", "p99_ms", "p50_connect_ms",
                               "p50_first_byte_ms", "p50_handshake_ms", "proxy_kib_per_conn",
                               "origin_kib_per_conn", "conns") if any(m in sd[t] for t in sd)]
        cpu = sorted({m for t in sd for m in sd[t] if m.endswith(tuple(f"_cpu_us_per_{u}" for u in ("req", "GiB", "hello", "query")))})
        extra = [m for m in ("errors", "lost", "failed", "foreign_pct", "log_opaque_allowed", "log_other")
                 if any(m in sd[t] for t in sd)]
        hdr = ["target", "n"] + metrics + cpu + extra + (["filter check"] if any("allowed_ok" in sd[t] for t in sd) else [])
        rows = []
        order = RESOLVERS if sc.startswith("dns") else PROXIES
        for t in sorted(sd, key=lambda t: order.index(t) if t in order else 99):
            key = metrics[0] if metrics else None
            _, nc, nt = S.rounds(t, key) if key else ([], 0, 0)
            row = [t, f"{nc}/{nt}"] + [fmt(S.med(t, m)) for m in metrics + cpu + extra]
            if hdr[-1] == "filter check":
                a, b = sd[t].get("allowed_ok", {}).get("0"), sd[t].get("denied_blocked", {}).get("0")
                row.append(("allow " + ("ok" if a == 1 else "FAIL") if a is not None else "") +
                           (", deny " + ("blocked" if b == 1 else "passes") if b is not None else ""))
            rows.append(row)
        out += [f"#### {sc}", ""] + table(hdr, rows) + [""]
    return out


def report(d, for_readme=False):
    data = load(d)
    meta = open(os.path.join(d, "meta.txt")).read().strip() if os.path.exists(os.path.join(d, "meta.txt")) else ""
    out = []
    out += ["```", meta, "```", ""]
    h, c = headline(data), cpu_table(data)
    if len(h) > 2 or any(s.startswith("dns") for s in data):  # more than a header: a proxy or DNS scenario ran
        out += [f"Medians over the rounds of one run; in parentheses the median of the per-round ratios to direct "
                f"and to HAProxy (for DNS: to unbound). Rounds with more than {FOREIGN_MAX:g} % foreign CPU are left "
                f"out when a clean one remains.", ""]
    if len(h) > 2:
        out += h + [""]
    if any(s.startswith("dns") for s in data):
        out += dns_table(data) + [""]
    if len(c) > 2:
        out += c + [""]
    dt = decide_table(data)
    if dt:
        out += dt + [""]
    it = inspect_tables.from_dir(d)
    if it:
        out += ["#### TLS inspection (`-s inspect`)", ""] + it + [""]
    ih = inspect_tables.from_dir_h2(d)
    if ih:
        out += ["#### HTTP/2 under inspection (`-s inspect-h2`)", ""] + ih + [""]
    st = startup_tables(data)
    if st:
        out += ["#### Start-up of `airlock run`", ""] + st + [""]
    log = os.path.join(d, "airlock-log.md")
    if os.path.exists(log):
        out += [re.sub(r"^### ", "#### ", open(log).read(), flags=re.M), ""]
    if not for_readme and details(data):
        out += ["### Details", ""] + details(data)
    return "\n".join(out)


def update_readme(readme, d):
    text = open(readme).read()
    block = BEGIN + "\n\n" + report(d, for_readme=True) + "\n" + END
    if BEGIN in text and END in text:
        text = text[: text.index(BEGIN)] + block + text[text.index(END) + len(END):]
    else:
        text = text.rstrip("\n") + "\n\n" + block + "\n"
    open(readme, "w").write(text)


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--update-readme":
        update_readme(sys.argv[2], sys.argv[3])
    elif len(sys.argv) == 2:
        print(report(sys.argv[1]))
    else:
        sys.exit(__doc__)
