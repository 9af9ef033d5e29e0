#!/usr/bin/env python3
"""inspect_tables.py RESULTS_DIR... : the inspect and inspect-h2 scenarios' tables, from the
raw.tsv of one or more bench/run results folders. With several folders the rounds of all
of them are pooled: every figure is the median over all rounds, every ratio the median of
the ratios taken within one round (the targets of a round ran minutes apart, in an
order rotated each round). Rounds with more than FOREIGN_MAX % foreign CPU are left out
when a clean round remains. report.py calls rows() for its summary."""
import csv
import os
import sys
from collections import defaultdict

from figures import fmt, med  # bench/lib

FOREIGN_MAX = float(os.environ.get("FOREIGN_MAX", "15"))
WRK_C = os.environ.get("INSP_C", "32")
TARGETS = [("airlock-inspect", "airlock, inspected"), ("airlock-splice", "airlock, not inspected (splice)"),
           ("squid-bump", "squid ssl_bump (bump)"), ("direct", "direct (no proxy)")]
MODES = [("inspect-new", "new connections (1 request each)"), ("inspect-keep", "kept-alive connections")]


def load(dirs):
    """{scenario: {target: {metric: {(run, round): value}}}}"""
    data = defaultdict(lambda: defaultdict(lambda: defaultdict(dict)))
    for i, d in enumerate(dirs):
        with open(os.path.join(d, "raw.tsv")) as f:
            for r in csv.DictReader(f, delimiter="\t"):
                if not r["scenario"].startswith("inspect-"):
                    continue
                try:
                    v = float(r["value"])
                except (TypeError, ValueError):
                    continue
                if v == v:
                    data[r["scenario"]][r["target"]][r["metric"]][(i, r["round"])] = v
    return data


def clean(sd, t):
    return {k for k, v in sd.get(t, {}).get("foreign_pct", {}).items() if v <= FOREIGN_MAX}


def values(sd, t, m):
    v = sd.get(t, {}).get(m, {})
    c = clean(sd, t) & set(v)
    return [v[k] for k in (c or v)], len(c), len(v)


def ratio(sd, a, b, m):
    va, vb = sd.get(a, {}).get(m, {}), sd.get(b, {}).get(m, {})
    common = set(va) & set(vb)
    use = (common & clean(sd, a) & clean(sd, b)) or common
    rs = [va[k] / vb[k] for k in use if vb[k]]
    return med(rs), rs


def table(data, head, targets, modes, ratios):
    """The rows every inspection table shares: requests/s and proxy CPU per request in each
    mode, per target, with `ratios` (pairs of targets: a / b, taken within each round)."""
    hdr = [head] + [w for _, w in targets] + [f"{a} / {b}" for a, b in ratios]
    out = ["| " + " | ".join(hdr) + " |", "|---|" + "---:|" * (len(hdr) - 1)]

    def line(label, sc, m, with_ratios):
        sd = data.get(sc, {})
        cells = [fmt(med(values(sd, t, m)[0])) for t, _ in targets]
        for a, b in ratios:
            r, rs = ratio(sd, a, b, m) if with_ratios else (0, [])
            cells.append(f"**{r:.2f}** ({min(rs):.2f}..{max(rs):.2f})" if rs else ("–" if with_ratios else ""))
        out.append("| " + " | ".join([label] + cells) + " |")

    for sc, what in modes:
        line(f"requests/s, {what}", sc, "rps", True)
    for sc, what in modes:
        line(f"proxy CPU µs per request, {what}", sc, "proxy_cpu_us_per_req", True)
    for sc, what in modes:
        line(f"origin CPU µs per request, {what}", sc, "server_cpu_us_per_req", True)
    return out, line


def rounds_note(data, targets, modes):
    counts = []
    for sc, what in modes:
        sd = data.get(sc, {})
        got = [values(sd, t, "rps") for t, _ in targets if values(sd, t, "rps")[2]]
        if got:
            counts.append(f"{what.split(' (')[0]}: {min(g[2] for g in got)} rounds per target, "
                          f"{min(g[1] for g in got)} or more of them clean")
    return ["", "; ".join(counts) + f" (clean: at most {FOREIGN_MAX:g} % foreign CPU; only clean rounds count when "
                "there are any). Ratios: the median of the ratios taken within one round, their range in parentheses."]


def rows(data):
    if not any(sc in data for sc, _ in MODES):
        return []
    out, line = table(data, f"HTTPS, 1 KiB page, wrk -c{WRK_C}", TARGETS, MODES,
                      [("airlock-inspect", "airlock-splice"), ("airlock-inspect", "squid-bump")])
    line("origin connections per request, new connections", "inspect-new", "origin_conns_per_req", False)
    line(f"origin connections per measurement, kept-alive (wrk holds {WRK_C})", "inspect-keep", "origin_conns", False)
    for sc, what in MODES:
        line(f"errors per measurement, {what}", sc, "errors", False)
    out += rounds_note(data, TARGETS, MODES)
    sd = data.get("inspect-new", {})
    checks = []
    for t, w in TARGETS:
        a = sd.get(t, {}).get("allowed_ok", {})
        b = sd.get(t, {}).get("denied_blocked", {})
        res = sd.get(t, {}).get("resumed", {})
        if a:
            checks.append(f"{t}: allowed name " + ("ok" if all(v == 1 for v in a.values()) else "FAILED") +
                          ", name on no list " + ("blocked" if all(v == 1 for v in b.values()) else "NOT blocked") +
                          (", session resumed" if any(v == 1 for v in res.values()) else ", no resumption"))
    if checks:
        out += ["", "Checks before measuring (curl trusting only the target's CA; a second TLS connection "
                    "offering the first one's session): " + "; ".join(checks) + "."]
    return out


H2_TARGETS = [("airlock-h2", "airlock inspected, h2"), ("airlock-h1", "airlock inspected, http/1.1"),
              ("squid-h1", "squid ssl_bump, http/1.1"), ("direct-h2", "direct, h2"), ("direct-h1", "direct, http/1.1")]
H2_MODES = [("inspect-h2-new", "new connections (1 request each, bench_loadgen)"),
            ("inspect-h2-keep", "kept-alive connections (h2load -m1)")]


def rows_h2(data):
    """The inspect-h2 scenario's table: inspected HTTP/2 against inspected HTTP/1.1 and squid."""
    if not any(sc in data for sc, _ in H2_MODES):
        return []
    out, line = table(data, f"HTTPS, 1 KiB page, {WRK_C} connections", H2_TARGETS, H2_MODES,
                      [("airlock-h2", "airlock-h1"), ("airlock-h2", "squid-h1"), ("airlock-h1", "squid-h1")])
    for sc, what in H2_MODES:
        line(f"errors per measurement, {what}", sc, "errors", False)
    out += rounds_note(data, H2_TARGETS, H2_MODES)
    sd = data.get("inspect-h2-new", {})
    checks = [f"{t}: " + ("ok" if all(v == 1 for v in sd[t]["allowed_ok"].values()) else "FAILED")
              for t, _ in H2_TARGETS if sd.get(t, {}).get("allowed_ok")]
    refused = sd.get("squid-h1", {}).get("h2_refused", {})
    if refused:
        checks.append("squid offered only h2: " + ("no h2 (as expected: squid bumps HTTP/1.1 only)"
                                                   if all(v == 1 for v in refused.values()) else "SPOKE h2"))
    if checks:
        out += ["", "Checks before measuring (one verified connection in the variant's protocol): " +
                "; ".join(checks) + "."]
    return out


def from_dir(d):
    return rows(load([d]))


def from_dir_h2(d):
    return rows_h2(load([d]))


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    data = load(sys.argv[1:])
    print("\n".join(rows(data) + [""] + rows_h2(data)))
