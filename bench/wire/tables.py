#!/usr/bin/env python3
"""tables.py SUFFIX TARGET... : markdown tables from $WIRE_OUT/TARGET{SUFFIX}/summary.json
(analyze.py --json) and $WIRE_OUT/strace-TARGET/strace-c.txt. Mean per connection (median in
parentheses where they differ)."""
import json
import os
import re
import sys

ST = os.environ.get("WIRE_OUT") or sys.exit("set WIRE_OUT to the run's out/ folder")
suffix = sys.argv[1]
targets = sys.argv[2:]


def load(t):
    p = f"{ST}/{t}{suffix}/summary.json"
    if not os.path.exists(p):
        return None
    with open(p) as f:
        return json.load(f)


def cell(agg, k):
    a = agg[k]
    m, md = a["mean"], a["median"]
    s = f"{m:g}"
    if md is not None and abs(md - m) > 0.05:
        s += f" ({md:g})"
    return s


rows = [("client_leg", "C>P", "client → proxy"), ("client_leg", "P>C", "proxy → client"),
        ("origin_leg", "P>O", "proxy → origin"), ("origin_leg", "O>P", "origin → proxy")]
keys = [("pkts", "packets"), ("data_segs", "segments with payload"), ("pure_acks", "pure ACKs"),
        ("fin", "FIN"), ("rst", "RST"), ("syn_resend", "SYN resent"), ("retrans", "data retransmitted"),
        ("psh", "PSH")]
data = {t: load(t) for t in targets}
targets = [t for t in targets if data[t]]
print(f"conns per target: " + ", ".join(f"{t} {data[t]['client_conns']}/{data[t]['origin_conns']}" for t in targets))
print()
for leg, d, title in rows:
    print(f"**{title}** (per connection, mean (median))\n")
    print("| | " + " | ".join(targets) + " |")
    print("|---|" + "---|" * len(targets))
    for k, name in keys:
        print(f"| {name} | " + " | ".join(cell(data[t][leg][d], k) for t in targets) + " |")
    print("| payload sizes, most common (share) | " + " | ".join(
        "<br>".join(f"{s[0]} ({s[1] * 100 // data[t]['client_conns']}%)" for s in data[t][leg][d]["sizes_top"][:2])
        for t in targets) + " |")
    print()
print("**packets per connection, both directions** (mean)\n")
print("| leg | " + " | ".join(targets) + " |")
print("|---|" + "---|" * len(targets))
for leg, a, b in (("client_leg", "C>P", "P>C"), ("origin_leg", "P>O", "O>P")):
    print(f"| {leg} | " + " | ".join(f"{data[t][leg][a]['pkts']['mean'] + data[t][leg][b]['pkts']['mean']:g}"
                                     for t in targets) + " |")
print()
print("**how each leg ends** (first FIN/RST seen, share of connections)\n")
for t in targets:
    cl = ", ".join(f"{k} {v}" for k, v in data[t]["client_leg"]["first_close"])
    ol = ", ".join(f"{k} {v}" for k, v in data[t]["origin_leg"]["first_close"])
    print(f"- {t}: client leg: {cl}; origin leg: {ol}")
print()
print("**timeline**, median µs after the client's SYN reached the gateway\n")
ks = list(data[targets[0]]["timeline_us_median"].keys())
print("| event | " + " | ".join(targets) + " |")
print("|---|" + "---|" * len(targets))
for k in ks:
    print(f"| {k} | " + " | ".join(str(data[t]["timeline_us_median"].get(k)) for t in targets) + " |")
print()
for t in targets:
    print(f"**{t}: most common sequences**\n")
    for leg in ("client_leg", "origin_leg"):
        for s, n in data[t][leg]["seq_top"][:2]:
            print(f"- {leg} ({n}/{data[t]['client_conns']}): `{s}`")
    for s, n in data[t]["merged_top"][:1]:
        print(f"- both legs in time order ({n}/{data[t]['pairs']}): `{s}`")
    print()
