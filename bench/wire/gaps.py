#!/usr/bin/env python3
"""gaps.py TAG... : per-connection median gaps (µs) between related events on the two legs, from
$WIRE_OUT/TARGET{TAG}/summary.json."""
import json, os, sys
OUT = os.environ.get("WIRE_OUT") or sys.exit("set WIRE_OUT to the run's out/ folder")
targets = ["direct", "airlock", "airlock-tproxy", "haproxy", "nginx", "floor"]
keys = None
rows = []
for tag in sys.argv[1:]:
    for t in targets:
        p = f"{OUT}/{t}{tag}/summary.json"
        if os.path.exists(p):
            g = json.load(open(p))["gaps_us_median"]
            keys = keys or list(g)
            rows.append((tag or "seq", t, g))
print("| run | target | " + " | ".join(keys) + " |")
print("|---|---|" + "---|" * len(keys))
for tag, t, g in rows:
    print(f"| {tag} | {t} | " + " | ".join(str(g[k]) for k in keys) + " |")
