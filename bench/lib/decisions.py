#!/usr/bin/env python3
"""decisions.py DECISIONS.jsonl AIRLOCK_STDERR: what airlock said during a bench run, as
markdown. Counts of (event, proto, verdict, reason, rcode), the denials of names on the
allowlist (the zone ok.albench: every one is a wrong answer under load), and airlock's
stderr lines other than the startup banner. Streams the log: it can be millions of lines."""
import collections
import json
import sys

ALLOWED_ZONE = "ok.albench"

log_path, stderr_path = sys.argv[1], sys.argv[2]
counts = collections.Counter()
wrong = collections.Counter()
examples = {}
bad_lines = 0
with open(log_path, errors="replace") as f:
    for line in f:
        try:
            d = json.loads(line)
        except ValueError:
            bad_lines += 1
            continue
        # Notes that carry a number (an HTTP/2 stream id) are counted under their kind.
        notes = [n.split(":", 1)[0] + ":N" if n.split(":", 1)[-1].isdigit() else n for n in d.get("notes") or []]
        key = (d.get("event"), d.get("proto"), d.get("verdict"), d.get("reason"), d.get("rcode"), ",".join(notes))
        counts[key] += 1
        name = d.get("name") or ""
        if d.get("verdict") != "allow" and d.get("event") in ("dns", "connect") and \
                (name == ALLOWED_ZONE or name.endswith("." + ALLOWED_ZONE)):
            wrong[(d.get("event"), d.get("reason"))] += 1
            examples.setdefault((d.get("event"), d.get("reason")), line.strip())
        elif d.get("event") == "dns" and d.get("verdict") == "allow" and d.get("rcode") not in ("NOERROR", None):
            wrong[("dns", "allowed but rcode " + str(d.get("rcode")))] += 1
            examples.setdefault(("dns", "allowed but rcode " + str(d.get("rcode"))), line.strip())

print("### airlock's decision log during the run\n")
print("| event | proto | verdict | reason | rcode | notes | lines |")
print("|---|---|---|---|---|---|---:|")
for (event, proto, verdict, reason, rcode, notes), n in counts.most_common():
    print(f"| {event} | {proto or '–'} | {verdict or '–'} | {reason or '–'} | {rcode or '–'} | {notes or '–'} | {n:,} |")
if bad_lines:
    print(f"\n{bad_lines} lines were not JSON.")
print("\n### Allowed names that did not get a clean allow\n")
if not wrong:
    print("None.")
for (event, reason), n in wrong.most_common():
    print(f"- {event} {reason}: {n:,}, e.g. `{examples[(event, reason)][:400]}`")
print("\n### airlock's stderr (other than 'ready')\n")
lines = collections.Counter()
try:
    with open(stderr_path, errors="replace") as f:
        for line in f:
            if "airlock: ready" not in line and line.strip():
                lines[line.strip()[:300]] += 1
except OSError:
    pass
if not lines:
    print("Nothing.")
for line, n in lines.most_common(20):
    print(f"- {n} x `{line}`")
