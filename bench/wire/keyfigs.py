#!/usr/bin/env python3
"""keyfigs.py [--mean] TAG... : per target, mean per connection of the key wire counts from
$WIRE_OUT/TARGET{TAG}/summary.json, one row per (target, tag) (TAG "" = the first sequential
round). --mean: one row per target, the mean of the tags' means (e.g. the wrk rounds)."""
import json, os, sys
OUT = os.environ.get("WIRE_OUT") or sys.exit("set WIRE_OUT to the run's out/ folder")
args = sys.argv[1:]
mean = bool(args) and args[0] == "--mean"
if mean:
    args = args[1:]
targets = ["direct", "airlock", "airlock-tproxy", "haproxy", "nginx", "floor"]
cols = [("client_leg", "C>P", "pkts"), ("client_leg", "P>C", "pkts"), ("client_leg", "P>C", "data_segs"),
        ("client_leg", "P>C", "fin"), ("client_leg", "P>C", "rst"), ("client_leg", "C>P", "rst"),
        ("client_leg", "P>C", "retrans"), ("origin_leg", "P>O", "pkts"), ("origin_leg", "O>P", "pkts"),
        ("origin_leg", "P>O", "data_segs"), ("origin_leg", "O>P", "fin"), ("origin_leg", "O>P", "retrans")]


def load(t, tag):
    p = f"{OUT}/{t}{tag}/summary.json"
    return json.load(open(p)) if os.path.exists(p) else None


if mean:
    print(f"mean per connection of the round means over {' '.join(args)}\n")
    print("| | " + " | ".join(t for t in targets if any(load(t, g) for g in args)) + " |")
    ts = [t for t in targets if any(load(t, g) for g in args)]
    print("|---|" + "---|" * len(ts))
    js = {t: [j for j in (load(t, g) for g in args) if j] for t in ts}
    for l, d, k in cols:
        print(f"| {d} {k} | " + " | ".join(f"{sum(j[l][d][k]['mean'] for j in js[t]) / len(js[t]):.2f}" for t in ts) + " |")
    print("| connections | " + " | ".join(str(sum(j['client_conns'] for j in js[t])) for t in ts) + " |")
    sys.exit(0)
print("| run | target | conns | " + " | ".join(f"{d} {k}" for _, d, k in cols) + " |")
print("|---|---|---|" + "---|" * len(cols))
for tag in args:
    for t in targets:
        j = load(t, tag)
        if j is None:
            continue
        print(f"| {tag or 'seq'} | {t} | {j['client_conns']} | " + " | ".join(f"{j[l][d][k]['mean']:.2f}" for l, d, k in cols) + " |")
