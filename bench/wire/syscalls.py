#!/usr/bin/env python3
"""syscalls.py N TARGET... : system calls per connection from $WIRE_OUT/strace-TARGET/strace-c.txt
(strace -f -c over N connections), as a markdown table."""
import os
import re
import sys

OUT = os.environ.get("WIRE_OUT") or sys.exit("set WIRE_OUT to the run's out/ folder")

n = int(sys.argv[1])
targets = sys.argv[2:]
per = {}
names = set()
for t in targets:
    d = {}
    try:
        for line in open(f"{OUT}/strace-{t}/strace-c.txt"):
            m = re.match(r"\s*[\d.]+\s+[\d.]+\s+\d+\s+(\d+)\s+(\d*)\s*(\w+)$", line)
            if m:
                d[m.group(3)] = (int(m.group(1)), int(m.group(2) or 0))
    except FileNotFoundError:
        continue
    per[t] = d
    names |= set(d)
targets = [t for t in targets if t in per]
order = sorted(names - {"total"}, key=lambda s: -max(per[t].get(s, (0, 0))[0] for t in targets))
print("| syscall (calls/conn, errors) | " + " | ".join(targets) + " |")
print("|---|" + "---|" * len(targets))
for s in order + ["total"]:
    cells = []
    for t in targets:
        c, e = per[t].get(s, (0, 0))
        cells.append(f"{c / n:.2f}" + (f" ({e / n:.2f})" if e else ""))
    print(f"| {s} | " + " | ".join(cells) + " |")
