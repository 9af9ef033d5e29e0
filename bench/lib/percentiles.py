#!/usr/bin/env python3
"""percentiles.py FILE SCENARIO TARGET ROUND: FILE has curl -w '%{http_code} %{time_total}'
lines; prints raw.tsv rows with the p50 and p99 latency in ms of the 200 responses and
their count."""
import sys

path, scenario, target, rnd = sys.argv[1:5]
ms = sorted(float(line.split()[1]) * 1000 for line in open(path) if line.startswith("200 "))
if ms:
    for name, p in (("p50_ms", 0.50), ("p99_ms", 0.99)):
        print(f"{scenario}\t{target}\t{name}\t{rnd}\t{ms[min(len(ms) - 1, int(round(p * (len(ms) - 1))))]:.3f}\tms")
print(f"{scenario}\t{target}\tok\t{rnd}\t{len(ms)}\tcount")
