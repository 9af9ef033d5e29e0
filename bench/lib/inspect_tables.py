#!/usr/bin/env python3
"""inspect_tables.py RESULTS_DIR... : the inspect scenario's table (issue 8), from the
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


def rows(data):
    if not any(sc in data for sc, _ in MODES):
        return []
    hdr = ["HTTPS, 1 KiB page, wrk -c32"] + [w for _, w in TARGETS] + ["inspected / not inspected",
                                                                        "inspected / squid bump"]
    out = ["| " + " | ".join(hdr) + " |", "|---|" + "---:|" * (len(hdr) - 1)]

    def line(label, sc, m, with_ratios):
        sd = data.get(sc, {})
        cells = [fmt(med(values(sd, t, m)[0])) for t, _ in TARGETS]
        if with_ratios:
            for b in ("airlock-splice", "squid-bump"):
                r, rs = ratio(sd, "airlock-inspect", b, m)
                cells.append(f"**{r:.2f}** ({min(rs):.2f}..{max(rs):.2f})" if rs else "–")
        else:
            cells += ["", ""]
        out.append("| " + " | ".join([label] + cells) + " |")

    for sc, what in MODES:
        line(f"requests/s, {what}", sc, "rps", True)
    for sc, what in MODES:
        line(f"proxy CPU µs per request, {what}", sc, "proxy_cpu_us_per_req", True)
    line("origin connections per request, new connections", "inspect-new", "origin_conns_per_req", False)
    line(f"origin connections per measurement, kept-alive (wrk holds {WRK_C})", "inspect-keep", "origin_conns", False)
    for sc, what in MODES:
        line(f"errors per measurement, {what}", sc, "errors", False)
    counts = []
    for sc, what in MODES:
        sd = data.get(sc, {})
        got = [values(sd, t, "rps") for t, _ in TARGETS if values(sd, t, "rps")[2]]
        if got:
            counts.append(f"{what.split(' (')[0]}: {min(g[2] for g in got)} rounds per target, "
                          f"{min(g[1] for g in got)} or more of them clean")
    out += ["", "; ".join(counts) + f" (clean: at most {FOREIGN_MAX:g} % foreign CPU; only clean rounds count when "
                "there are any). Ratios: the median of the ratios taken within one round, their range in parentheses."]
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


def from_dir(d):
    return rows(load([d]))


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    print("\n".join(rows(load(sys.argv[1:]))))
