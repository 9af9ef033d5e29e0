#!/usr/bin/env python3
"""percentiles.py FILE SCENARIO TARGET ROUND: FILE has curl -w '%{http_code} %{time_total}
%{time_connect} %{time_appconnect} %{time_starttransfer}' lines; prints raw.tsv rows: p50 and
p99 of the whole request in ms, the p50 of the TCP connect, the p50 from the end of the
handshake (TCP, or TLS when there is one) to the first response byte, and the count of 200s.
Through a proxy the connect is answered by the proxy itself; the TLS handshake and the first
byte wait for its decision and its own connection upstream."""
import sys

path, scenario, target, rnd = sys.argv[1:5]
rows = [line.split() for line in open(path) if line.startswith("200 ")]


def pct(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p * (len(values) - 1))))]


if rows:
    total = [float(r[1]) * 1000 for r in rows]
    out = [("p50_ms", pct(total, 0.50)), ("p99_ms", pct(total, 0.99))]
    if len(rows[0]) >= 5:
        connect = [float(r[2]) * 1000 for r in rows]
        after = [(float(r[4]) - max(float(r[2]), float(r[3]))) * 1000 for r in rows]
        out += [("p50_connect_ms", pct(connect, 0.50)), ("p50_first_byte_ms", pct(after, 0.50))]
        if float(rows[0][3]) > 0:  # TLS: the handshake, which waits for the proxy's decision and upstream
            out.append(("p50_handshake_ms", pct([(float(r[3]) - float(r[2])) * 1000 for r in rows], 0.50)))
    for name, v in out:
        print(f"{scenario}\t{target}\t{name}\t{rnd}\t{v:.3f}\tms")
print(f"{scenario}\t{target}\tok\t{rnd}\t{len(rows)}\tcount")
