#!/usr/bin/env python3
"""bench/soak's figures: airlock's process, its decision log, and the clients' counts.

    soak_report.py sample STATE LOG COUNTS_DIR PID LABEL MODE [METRICS_URL]
    soak_report.py table STATE [FACTS_MD] [OUT]

sample: reads airlock's RSS (VmRSS of /proc/PID/status), open descriptors (/proc/PID/fd),
CPU seconds (utime + stime of /proc/PID/stat), and, with METRICS_URL, its open connections
and dropped lines from /metrics; then what the clients made (every COUNTS_DIR/*.counts line
"KIND N"), then, after a short settle, the decision log's new lines (read incrementally:
STATE, a JSON file, keeps the offset and the totals). Prints the sample's report and adds
its row to STATE. MODE says how made and logged are compared per kind:
  interim  requests are in flight: only fewer lines than requests is a mismatch (lost)
  end      the clients have stopped and nothing is open: the counts must be equal
  final    airlock has exited (PID is gone): equal, on the complete log
A line whose verdict is not the kind's (an allowed fetch denied, a hostile one allowed)
is a mismatch in every mode.

table: the markdown table of every row, the final per-kind comparison and the log's lines
by event, verdict and reason; FACTS_MD (markdown) is appended; with OUT, also written there.
"""
import collections
import json
import os
import sys
import time
import urllib.request

BIG_SIZE = int(os.environ.get("SOAK_BIG_SIZE", "5000000"))

# kind -> (expected verdict, what one "made" is)
KINDS = {
    "https_new": ("allow", "curl: a new HTTPS connection (Connection: close), one page"),
    "https_keepalive": ("allow", "curl: one HTTPS connection, 10 requests kept alive"),
    "http_plain": ("allow", "curl: one plain HTTP connection, 5 requests, each judged"),
    "https_big": ("allow", f"curl: one HTTPS download of {BIG_SIZE:,} bytes"),
    "dig_allowed": ("allow", "dig: one query for an allowed name (UDP, some TCP; most never asked before)"),
    "dig_denied": ("deny", "dig: one query for a denied name"),
    "sni_denied": ("deny", "curl: TLS naming a denied host, to the attacker's address"),
    "host_denied": ("deny", "curl: HTTP Host naming a denied host"),
    "metadata": ("deny", "curl: http://169.254.169.254/ (always_deny)"),
    "private_http": ("deny", "curl: http:// and https:// to 10.66.0.10"),
    "private_raw": ("deny", "ssh-like banner to 10.66.0.10:22"),
    "silent": ("deny", "a connection to 203.0.113.77 that never sends a byte"),
    "flood": ("deny", "the flooding sandbox's silent connections (203.0.113.88)"),
    "dns_malformed": ("deny", "a malformed UDP packet to :53"),
    "dns_tcp_zero": ("deny", "DNS over TCP, length prefix 0"),
    "dns_tcp_partial": ("deny", "DNS over TCP, part of a query, then closed"),
    "dns_tcp_quiet": ("deny", "DNS over TCP asking nothing"),
}
ALLOWED_NAMES = {"new.soak.test": "https_new", "ka.soak.test": "https_keepalive",
                 "plain.soak.test": "http_plain", "big.soak.test": "https_big"}


def classify(o):
    ev, name, dst = o.get("event"), o.get("name") or "", o.get("dst") or ""
    notes = o.get("notes") or []
    if ev == "connect":
        if dst.startswith("10.66.0.10:"):
            return "private_raw" if dst.endswith(":22") else "private_http"
        if dst.startswith("169.254.169.254:"):
            return "metadata"
        if dst.startswith("203.0.113.77:"):
            return "silent"
        if dst.startswith("203.0.113.88:"):
            return "flood"
        if name.endswith(".sni.evil.test"):
            return "sni_denied"
        if name.endswith(".host.evil.test"):
            return "host_denied"
        return ALLOWED_NAMES.get(name)
    if ev == "dns":
        for note, kind in (("dns_tcp:length_zero", "dns_tcp_zero"), ("dns_tcp:partial_query", "dns_tcp_partial"),
                           ("dns_tcp:no_query", "dns_tcp_quiet")):
            if note in notes:
                return kind
        if any(n.startswith("dns_tcp:") for n in notes):
            return None
        if o.get("reason") == "dns_malformed" and not any(n.startswith("edns_version") for n in notes):
            return "dns_malformed"
        if name.endswith(".dns.soak.test"):
            return "dig_allowed"
        if name.endswith(".dig.evil.test"):
            return "dig_denied"
    return None


def new_state():
    return {"offset": 0, "lines": 0, "bad_json": 0, "dropped_lines": 0,
            "events": {}, "reasons": {}, "logged": {}, "wrong": {}, "wrong_examples": {},
            "open_conns": [], "allowed_connects": 0, "closes": 0, "big_short": 0,
            "per_session": {}, "session_totals": {}, "notes": {},
            "rows": [], "prev": None}


def read_log(st, path):
    """Adds the complete lines written since the last call."""
    events = collections.Counter(st["events"])
    reasons = collections.Counter(st["reasons"])
    logged = collections.Counter(st["logged"])
    wrong = collections.Counter(st["wrong"])
    open_conns = set(st["open_conns"])
    try:
        f = open(path, "rb")
    except FileNotFoundError:
        return
    with f:
        f.seek(st["offset"])
        data = f.read()
    end = data.rfind(b"\n") + 1
    for raw in data[:end].splitlines():
        st["lines"] += 1
        try:
            o = json.loads(raw)
        except ValueError:
            st["bad_json"] += 1
            continue
        ev = o.get("event")
        if ev == "session":
            events[f"session/{o.get('action')}"] += 1
            if o.get("action") == "close":
                st["session_totals"][o.get("session")] = {
                    k: o.get(k) for k in ("dns_queries", "connections_allowed", "connections_denied")}
            continue
        if ev == "log_dropped":
            events["log_dropped"] += 1
            st["dropped_lines"] += int(o.get("count") or 0)
            continue
        verdict = o.get("verdict")
        events[f"{ev}/{verdict}"] += 1
        for note in o.get("notes") or []:
            if note.startswith(("requests:", "redirect_", "sni:", "host:", "client_tls:", "upstream_tls:")):
                note = note.split(":", 1)[0] + ":..."
            key = f"{ev}/{verdict}/{note}"
            st["notes"][key] = st["notes"].get(key, 0) + 1
        if ev in ("dns", "connect") and o.get("session"):
            per = st["per_session"].setdefault(o["session"], {"dns": 0, "allow": 0, "deny": 0})
            per["dns" if ev == "dns" else ("allow" if verdict == "allow" else "deny")] += 1
        reasons[f"{ev}/{verdict}/{o.get('reason')}"] += 1
        if ev == "connect" and verdict == "allow":
            st["allowed_connects"] += 1
            open_conns.add(o.get("conn"))
        if ev == "close":
            st["closes"] += 1
            open_conns.discard(o.get("conn"))
            if o.get("name") == "big.soak.test" and (o.get("bytes_down") or 0) < BIG_SIZE:
                st["big_short"] += 1
            continue
        kind = classify(o)
        if kind is None:
            continue
        logged[kind] += 1
        if verdict != KINDS[kind][0]:
            wrong[kind] += 1
            ex = st["wrong_examples"].setdefault(kind, [])
            if len(ex) < 3:
                ex.append(raw.decode(errors="replace")[:400])
    st["offset"] += end
    st["events"], st["reasons"], st["logged"], st["wrong"] = dict(events), dict(reasons), dict(logged), dict(wrong)
    st["open_conns"] = sorted(c for c in open_conns if c is not None)


def read_counts(counts_dir):
    made = collections.Counter()
    for fn in sorted(os.listdir(counts_dir)):
        if not fn.endswith(".counts"):
            continue
        with open(os.path.join(counts_dir, fn), encoding="ascii", errors="replace") as f:
            for line in f:
                parts = line.split()
                if len(parts) == 2 and parts[1].isdigit():
                    made[parts[0]] += int(parts[1])
    return made


def proc_figures(pid):
    """(RSS KiB, open descriptors, CPU seconds) of PID, or None when it is gone."""
    try:
        with open(f"/proc/{pid}/status") as f:
            rss = next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))
        fds = len(os.listdir(f"/proc/{pid}/fd"))
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        ticks = os.sysconf("SC_CLK_TCK")
        cpu = (int(fields[11]) + int(fields[12])) / ticks  # utime, stime (fields 14, 15)
        return rss, fds, cpu
    except (OSError, StopIteration, IndexError, ValueError):
        return None


TCP_STATES = {"01": "ESTABLISHED", "02": "SYN_SENT", "03": "SYN_RECV", "04": "FIN_WAIT1", "05": "FIN_WAIT2",
              "06": "TIME_WAIT", "07": "CLOSE", "08": "CLOSE_WAIT", "09": "LAST_ACK", "0A": "LISTEN",
              "0B": "CLOSING"}


def fd_kinds(pid):
    """PID's descriptors by kind: TCP sockets by state, UDP and unix sockets, pipes, anon
    inodes, files (the socket tables are those of this process's namespace: run it in
    airlock's). A descriptor leak shows as one kind that only grows (CLOSE_WAIT: a peer
    closed and airlock never did)."""
    sockets = {}
    for proto in ("tcp", "tcp6", "udp", "udp6", "unix"):
        try:
            with open(f"/proc/net/{proto}") as f:
                next(f)
                for line in f:
                    cols = line.split()
                    if proto == "unix":
                        sockets[cols[6]] = "unix"
                    elif proto.startswith("tcp"):
                        sockets[cols[9]] = "tcp " + TCP_STATES.get(cols[3], cols[3])
                    else:
                        sockets[cols[9]] = "udp"
        except OSError:
            pass
    kinds = collections.Counter()
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if target.startswith("socket:["):
                kinds[sockets.get(target[8:-1], "socket (other)")] += 1
            elif target.startswith("pipe:"):
                kinds["pipe"] += 1
            elif target.startswith("anon_inode:"):
                kinds[target] += 1
            else:
                kinds["file"] += 1
    except OSError:
        pass
    return dict(kinds)


def metrics(url):
    """airlock_active_connections and airlock_log_dropped_total from /metrics, or {}."""
    if not url:
        return {}
    try:
        text = urllib.request.urlopen(url, timeout=5).read().decode()
    except OSError:
        return {}
    out = {}
    for line in text.splitlines():
        for key in ("airlock_active_connections", "airlock_log_dropped_total", "airlock_log_queue_depth"):
            if line.startswith(key + " ") or line.startswith(key + "{"):
                out[key] = out.get(key, 0) + float(line.split()[-1])
    return out


def compare(st, made, mode):
    """Per kind: (made, logged, wrong verdicts, status text, is a mismatch)."""
    rows = []
    for kind, (verdict, _) in KINDS.items():
        m, lg, w = made.get(kind, 0), st["logged"].get(kind, 0), st["wrong"].get(kind, 0)
        status, bad = [], False
        if lg < m:
            status.append(f"MISSING {m - lg}")
            bad = True
        elif lg > m:
            if mode == "interim":
                status.append(f"{lg - m} in flight")
            else:
                status.append(f"EXTRA {lg - m}")
                bad = True
        if w:
            status.append(f"WRONG VERDICT {w}")
            bad = True
        fail = made.get("fail:" + kind, 0)
        if fail:
            status.append(f"client saw {fail} failed")
        unc = made.get("unconnected:" + kind, 0) + made.get("error:" + kind, 0)
        if unc:
            status.append(f"{unc} never connected")
        rows.append((kind, m, lg, w, verdict, "; ".join(status) or "ok", bad))
    # every allowed connection's close line
    m, lg = st["allowed_connects"], st["closes"]
    status, bad = "ok", False
    if mode != "interim" and (lg != m or st["open_conns"]):
        status, bad = f"MISSING {m - lg} close lines (conn {st['open_conns'][:5]}...)", True
    elif mode == "interim":
        status = f"{m - lg} open"
    if st["big_short"]:
        status += f"; {st['big_short']} big downloads relayed short"
        bad = True
    rows.append(("(close lines)", m, lg, 0, "allow", status, bad))
    return rows


def fmt_elapsed(seconds):
    seconds = int(round(seconds))
    return f"{seconds // 60}:{seconds % 60:02d}"


def sample(state_path, log_path, counts_dir, pid, label, mode, metrics_url=None):
    st = json.load(open(state_path)) if os.path.exists(state_path) else new_state()
    now = time.monotonic()
    figs = proc_figures(pid) if mode != "final" else None
    met = metrics(metrics_url) if mode != "final" else {}
    made = read_counts(counts_dir)
    # Lines are written by airlock's own thread a moment after each decision: a request the
    # clients counted before this point has its line by the end of the settle.
    time.sleep(1.5 if mode == "interim" else 0.5)
    read_log(st, log_path)
    cmp_rows = compare(st, made, mode)
    mismatches = sum(1 for r in cmp_rows if r[6])
    failed = sum(v for k, v in made.items() if k.startswith("fail:"))
    requests = sum(made.get(k, 0) for k in KINDS)

    out = []
    if figs:
        rss, fds, cpu = figs
        line = f"RSS {rss / 1024:.1f} MiB · fds {fds} · CPU {cpu:.2f} s"
        if st["prev"]:
            dt, dc = now - st["prev"]["mono"], cpu - st["prev"]["cpu"]
            line += f" (+{dc:.2f} s in {dt:.0f} s: {100 * dc / dt:.0f}% of one core)"
        if met:
            line += (f" · open connections {met.get('airlock_active_connections', 0):.0f}"
                     f" · log queue {met.get('airlock_log_queue_depth', 0):.0f}"
                     f" · log dropped {met.get('airlock_log_dropped_total', 0):.0f}")
        kinds = fd_kinds(pid)
        line += "\n   fds: " + ", ".join(f"{k} {v}" for k, v in sorted(kinds.items()))
        st["prev"] = {"mono": now, "cpu": cpu}
    else:
        rss = fds = cpu = None
        line = "airlock has exited: the log is complete"
    out.append(f"== {label} ({mode}) " + line)
    prev_lines = st["rows"][-1]["lines"] if st["rows"] else 0
    ev = st["events"]
    out.append(f"   decision lines {st['lines']:,} (+{st['lines'] - prev_lines:,}): "
               + " · ".join(f"{k} {v:,}" for k, v in sorted(ev.items())))
    if st["bad_json"] or st["dropped_lines"]:
        out.append(f"   NOT JSON: {st['bad_json']} lines; lines airlock reported dropped: {st['dropped_lines']}")
    out.append(f"   {'kind':<16} {'made':>7} {'logged':>7}  expect  status")
    for kind, m, lg, w, verdict, status, bad in cmp_rows:
        out.append(f"   {kind:<16} {m:>7,} {lg:>7,}  {verdict:<6}  {status}")
    out.append(f"   requests made {requests:,}; mismatches {mismatches}"
               + ("" if mismatches else " (every request made has its decision line)")
               + f"; allowed requests the clients saw fail: {failed}")
    if mode == "final" and st["session_totals"]:
        # airlock's own per-session counters (the session close lines) beside the lines it wrote
        out.append("   session close totals (dns queries / connections allowed / denied) against the lines:")
        for sid, tot in sorted(st["session_totals"].items()):
            per = st["per_session"].get(sid, {"dns": 0, "allow": 0, "deny": 0})
            have = (tot["dns_queries"], tot["connections_allowed"], tot["connections_denied"])
            lines = (per["dns"], per["allow"], per["deny"])
            out.append(f"     {sid:<10} totals {have[0]}/{have[1]}/{have[2]}  lines {lines[0]}/{lines[1]}/{lines[2]}"
                       + ("" if have == lines else "  (differ)"))
    for kind, ex in st["wrong_examples"].items():
        for e in ex[:1]:
            out.append(f"   wrong verdict, {kind}: {e}")
    print("\n".join(out), flush=True)

    st["rows"].append({"label": label, "mode": mode, "rss_kib": rss, "fds": fds, "cpu_s": cpu,
                       "lines": st["lines"], "requests": requests, "mismatches": mismatches,
                       "failed": failed, "open": met.get("airlock_active_connections"),
                       "compare": [list(r) for r in cmp_rows]})
    tmp = state_path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(st, f)
    os.replace(tmp, state_path)
    return 0


def table(state_path, facts=None, out_path=None):
    st = json.load(open(state_path))
    out = ["| time | RSS MiB | fds | CPU s | lines | requests | mismatches | allowed failed |",
           "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in st["rows"]:
        if r["mode"] == "final":
            continue
        rss = f"{r['rss_kib'] / 1024:.1f}" if r["rss_kib"] is not None else "-"
        fds = str(r["fds"]) if r["fds"] is not None else "-"
        cpu = f"{r['cpu_s']:.1f}" if r["cpu_s"] is not None else "-"
        out.append(f"| {r['label']} | {rss} | {fds} | {cpu} | {r['lines']:,} | {r['requests']:,} "
                   f"| {r['mismatches']} | {r['failed']} |")
    last = st["rows"][-1]
    out += ["", f"Requests made and their decision lines ({last['label']}, {last['mode']}):", "",
            "| kind | what | made | logged | expected verdict | status |", "|---|---|---:|---:|---|---|"]
    for kind, m, lg, w, verdict, status, bad in last["compare"]:
        what = KINDS[kind][1] if kind in KINDS else "close lines of allowed connections"
        out.append(f"| {kind} | {what} | {m:,} | {lg:,} | {verdict} | {status} |")
    out += ["", "Decision lines by event, verdict and reason:", "", "| event/verdict/reason | lines |", "|---|---:|"]
    for k, v in sorted(st["reasons"].items(), key=lambda kv: (-kv[1], kv[0])):
        out.append(f"| {k} | {v:,} |")
    for k, v in sorted(st["events"].items()):
        if k.startswith("session") or k == "log_dropped":
            out.append(f"| {k} | {v:,} |")
    if st.get("notes"):
        out += ["", "Notes on those lines:", "", "| event/verdict/note | lines |", "|---|---:|"]
        for k, v in sorted(st["notes"].items(), key=lambda kv: (-kv[1], kv[0])):
            out.append(f"| {k} | {v:,} |")
    if st.get("session_totals"):
        out += ["", "Each session's close line (airlock's counters) against its lines in the log:", "",
                "| session | dns_queries | dns lines | connections_allowed | allow lines | connections_denied | deny lines |",
                "|---|---:|---:|---:|---:|---:|---:|"]
        for sid, tot in sorted(st["session_totals"].items()):
            per = st["per_session"].get(sid, {"dns": 0, "allow": 0, "deny": 0})
            out.append(f"| {sid} | {tot['dns_queries']} | {per['dns']} | {tot['connections_allowed']} | {per['allow']} "
                       f"| {tot['connections_denied']} | {per['deny']} |")
    text = "\n".join(out) + "\n"
    if facts and os.path.exists(facts):
        text += "\n" + open(facts).read()
    sys.stdout.write(text)
    if out_path:
        with open(out_path, "a") as f:
            f.write(text)
    return 0


def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "sample":
        return sample(args[0], args[1], args[2], int(args[3]), args[4], args[5], args[6] if len(args) > 6 else None)
    if cmd == "table":
        return table(args[0], args[1] if len(args) > 1 else None, args[2] if len(args) > 2 else None)
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
