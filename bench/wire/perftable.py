#!/usr/bin/env python3
"""perftable.py N TAG TARGET... : per-connection kernel event counts from
$WIRE_OUT/perf-TARGET{TAG}/{client,origin,proxy}.csv (perfcount.sh, N connections; N=0: the connections analyze.py counted in
$WIRE_OUT/TARGET{TAG}/summary.json, for wrkload.sh runs)."""
import json
import os
import sys

OUT = os.environ.get("WIRE_OUT") or sys.exit("set WIRE_OUT to the run's out/ folder")

n = int(sys.argv[1]); tag = sys.argv[2]; targets = sys.argv[3:]
EV = ["sched:sched_waking", "ipi:ipi_send_cpu", "net:net_dev_xmit", "net:netif_receive_skb", "irq:softirq_entry",
      "tcp:tcp_retransmit_skb", "context-switches", "task-clock"]


def load(path):
    d = {}
    if not os.path.exists(path):
        return d
    for line in open(path):
        f = line.strip().split(",")
        if len(f) > 3 and f[0] and not line.startswith("#"):
            try:
                d[f[2]] = float(f[0])
            except ValueError:
                pass
    return d


def conns(t):
    if n:
        return n
    j = json.load(open(f"{OUT}/{t}{tag}/summary.json"))
    return j["client_conns"] + j.get("incomplete_dropped", 0)


print("connections: " + ", ".join(f"{t} {conns(t)}" for t in targets) + "\n")
for role in ("client", "origin", "proxy"):
    print(f"**{role}** (per connection; task-clock in µs, noisy: 2 busy cores)\n")
    print("| event | " + " | ".join(targets) + " |")
    print("|---|" + "---|" * len(targets))
    data = {t: load(f"{OUT}/perf-{t}{tag}/{role}.csv") for t in targets}
    for e in EV:
        cells = []
        for t in targets:
            v = data[t].get(e)
            if v is None:
                cells.append("–")
            elif e == "task-clock":
                cells.append(f"{v * 1000 / conns(t):.0f}")
            else:
                cells.append(f"{v / conns(t):.2f}")
        print(f"| {e} | " + " | ".join(cells) + " |")
    print()
