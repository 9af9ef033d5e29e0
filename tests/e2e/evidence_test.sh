#!/usr/bin/env bash
# Evidence: a session registered through the control API gets its labels and tool call on
# every line, exactly one line per decision (and a close line per allowed connection), and
# its totals on the session's close event; the control socket is owner-only and reloads with
# FILE:LINE:COL errors; /metrics agrees with the log;
# and a full disk under the log costs lines (counted and reported), never enforcement.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
WORLD_RECORDS="listed.airlock.test 203.0.113.10
extra.airlock.test 203.0.113.10
later.airlock.test 203.0.113.10
unlisted.airlock.test 203.0.113.10"
WORLD_CERT_NAMES="listed.airlock.test extra.airlock.test later.airlock.test unlisted.airlock.test"
source "$here/lib/world.sh"
source "$here/lib/check.sh"
world_up

write_config() {  # write_config LOGFILE HOST...: the sandbox policy allows the hosts
  local log=$1
  shift
  for h in "$@"; do echo "      - host: $h"; done | world_airlock_config cfg-sandbox
  sed -i "s|^  dns: 0.0.0.0:15053|  dns: 0.0.0.0:15053\n  admin: 127.0.0.1:19901\n  control: $W/control.sock|" "$W/airlock.yaml"
  sed -i "s|^  decisions: .*|  decisions: $log|" "$W/airlock.yaml"
}
write_config "$W/decisions.jsonl" listed.airlock.test
world_start_airlock -c "$W/airlock.yaml"

api() {  # api METHOD PATH [BODY]: prints the body, then the status on its own line
  ip netns exec "$GW" curl -sS --max-time 5 --unix-socket "$W/control.sock" -X "$1" \
    ${3:+-H 'Content-Type: application/json' -d "$3"} -w '\n%{http_code}\n' "http://airlock$2"
}
status_is() { [[ $(tail -1 <<<"$1") == "$2" ]]; }
metrics() { ip netns exec "$GW" curl -sS --max-time 5 http://127.0.0.1:19901/metrics; }

# --- control socket: owner only ------------------------------------------------------------
expect "the control socket is mode 0600" test "$(stat -c %a "$W/control.sock")" = 600
chmod 755 "$W"  # only the socket's own mode stands in the way now
expect_not "  another user cannot use it" \
  ip netns exec "$GW" setpriv --reuid=65534 --regid=65534 --clear-groups \
  curl -sS --max-time 5 --unix-socket "$W/control.sock" http://airlock/v1/info
chmod 700 "$W"
expect_not "the sandbox cannot reach the admin port through the gateway" \
  world_sbx curl -fsS --max-time 3 "http://$GW_SBX_IP:19901/healthz"
expect "  (its connection went to the proxy, which refused an address it never resolved)" \
  line event=connect dst=$GW_SBX_IP:19901 verdict=deny reason=no_name
expect "/healthz answers ok" body_is ok ip netns exec "$GW" curl -sS --max-time 5 http://127.0.0.1:19901/healthz

# --- a runtime session with labels, an extra allowance and a tool call ----------------------
out=$(api POST /v1/sessions \
  '{"id":"rt-1","sources":["198.51.100.2/32"],"policy":"sandbox","allow":["extra.airlock.test:443"],"labels":{"repo":"acme/web","task":"t-9"},"netns":"/run/netns/'"$SBX"'"}')
expect "a session registers through the control API (201)" status_is "$out" 201
expect "  and opens with a session event carrying its labels" \
  line event=session session=rt-1 action=open 'labels~="repo": "acme/web"'
out=$(api PUT /v1/sessions/rt-1/context '{"tool_call":"call-42"}')
expect "its tool call is set (200)" status_is "$out" 200

# Exactly known traffic: 4 DNS queries (dig, one try each) and 3 connections (curl --resolve,
# so curl itself asks no DNS), then the upload below asks A and AAAA.
for name in listed extra unlisted later; do
  world_sbx dig +time=3 +tries=1 +short @"$GW_SBX_IP" "$name.airlock.test" >/dev/null || true
done
r() { echo "--resolve $1.airlock.test:443:$ORIGIN_IP"; }
expect "an allowed name works" body_is "origin says hello to listed.airlock.test" \
  sbx_curl $(r listed) https://listed.airlock.test/
expect "the session's extra allowance works" body_is "origin says hello to extra.airlock.test" \
  sbx_curl $(r extra) https://extra.airlock.test/
expect_not "an unlisted name is refused" sbx_curl $(r unlisted) https://unlisted.airlock.test/

# A postinstall-style exfiltration: a shell runs curl to a name the policy does not list.
world_sbx sh -c "curl -sS --max-time 5 --cacert $W/ca.crt https://unlisted.airlock.test/upload" >/dev/null 2>&1 || true

expect "exactly 6 dns lines for the session (the upload asked A and AAAA)" line --count 6 event=dns session=rt-1
expect "exactly 3 connect lines for the session" line --count 3 event=connect session=rt-1
expect "  and a close line for each allowed one" line --count 2 event=close session=rt-1 verdict=allow
expect "every one carries the labels and the tool call" \
  line --count 11 session=rt-1 tool_call=call-42 'labels~="task": "t-9"'
expect "airlock explain tells the session's story, the denied upload with its process chain" python3 - \
  "$("$AIRLOCK" explain --log "$W/decisions.jsonl" rt-1 2>&1)" <<'PY'
import sys
story = sys.argv[1]
print(story)
want = ["unlisted.airlock.test", "DENY", "host_not_allowed", "sh -> curl", "https://unlisted.airlock.test/upload",
        "extra.airlock.test", "session rt-1 allow:1"]
missing = [w for w in want if w not in story]
sys.exit(f"missing from the story: {missing}" if missing else 0)
PY
expect "  the extra allowance names where it came from" \
  line event=connect name=extra.airlock.test verdict=allow 'rule=session rt-1 allow:1'
expect "a DNS line names the process that asked (dig)" line event=dns session=rt-1 'process~="comm": "dig"'
expect "a connection line names its process (curl, with its command line)" \
  line event=connect session=rt-1 name=extra.airlock.test 'process~="comm": "curl"' 'process~=https://extra.airlock.test/'
expect "every decision line has every contract field" python3 - "$W/decisions.jsonl" <<'PY'
import json, sys
common = {"ts", "schema", "event", "session", "labels", "tool_call", "client", "name", "dst", "upstream", "proto",
          "verdict", "reason", "rule", "conn", "policy", "policy_version", "process"}
per_event = {"dns": {"qtype", "rcode", "answers"}, "connect": {"bytes_up", "bytes_down", "duration_ms"},
             "close": {"bytes_up", "bytes_down", "duration_ms"}}
bad = 0
for n, line in enumerate(open(sys.argv[1]), 1):
    obj = json.loads(line)
    if obj["event"] not in per_event:
        continue
    missing = (common | per_event[obj["event"]]) - obj.keys()
    if missing or obj["schema"] != 2:
        bad += 1
        print(f"line {n}: missing {sorted(missing)}")
sys.exit(1 if bad else 0)
PY

# --- /metrics agrees with the log ------------------------------------------------------------
expect "/metrics parses and counts the denied connection the log shows" python3 - <<PY
import re, subprocess, sys
text = subprocess.run(["ip", "netns", "exec", "$GW", "curl", "-sS", "--max-time", "5",
                       "http://127.0.0.1:19901/metrics"], capture_output=True, text=True, check=True).stdout
samples = {}
for line in text.splitlines():
    if line.startswith("#") or not line.strip():
        continue
    m = re.fullmatch(r'([a-z_]+)(\{(.*)\})? ([0-9.e+-]+)', line)
    if not m:
        sys.exit(f"unparseable metrics line: {line}")
    labels = dict(re.findall(r'([a-z_]+)="([^"]*)"', m.group(3) or ""))
    samples.setdefault(m.group(1), []).append((labels, float(m.group(4))))
def total(name, **want):
    return sum(v for labels, v in samples.get(name, []) if all(labels.get(k) == w for k, w in want.items()))
denied = total("airlock_decisions_total", event="connect", verdict="deny", reason="host_not_allowed")
dns = total("airlock_decisions_total", event="dns")
print(f"connect denies {denied}, dns decisions {dns}, upstream answers {total('airlock_dns_upstream_seconds_count')}")
ok = denied == 1 and dns == 6 and total("airlock_dns_upstream_seconds_count", outcome="answered") >= 2 \
     and "airlock_log_dropped_total" in samples and "airlock_active_connections" in samples
sys.exit(0 if ok else 1)
PY

# --- removal: totals in the answer and on the close event ------------------------------------
out=$(api DELETE /v1/sessions/rt-1)
expect "removing the session answers its totals" python3 -c '
import json, sys
t = json.loads(sys.argv[1].splitlines()[0])
sys.exit(0 if (t["dns_queries"], t["connections_allowed"], t["connections_denied"]) == (6, 2, 1) and t["bytes_down"] > 0 else 1)
' "$out"
expect "  and the close event carries the same totals" line event=session session=rt-1 action=close \
  dns_queries=6 connections_allowed=2 connections_denied=1 tool_call=call-42
expect "after removal the configured session answers for the sandbox again" \
  line --wait 0 event=session session=cfg-sandbox action=open

# --- reload through the API -------------------------------------------------------------------
cp "$W/airlock.yaml" "$W/good.yaml"
sed -i 's/      - host: listed.airlock.test/      - hots: listed.airlock.test/' "$W/airlock.yaml"
out=$(api POST /v1/reload)
expect "a bad file is refused (422) with FILE:LINE:COL" \
  bash -c '[[ $(tail -1 <<<"$1") == 422 ]] && grep -q "airlock.yaml:[0-9]*:[0-9]*: .*hots" <<<"$1"' _ "$out"
write_config "$W/decisions.jsonl" listed.airlock.test later.airlock.test
out=$(api POST /v1/reload)
expect "a good file is taken (200)" status_is "$out" 200
expect "  and is in force: later.airlock.test is allowed now" body_is "origin says hello to later.airlock.test" \
  sbx_curl $(r later) https://later.airlock.test/
reloads_counted() {
  local m
  m=$(metrics)
  grep -q '^airlock_reloads_total{result="failed"} 1$' <<<"$m" && grep -q '^airlock_reloads_total{result="ok"} 1$' <<<"$m"
}
expect "reloads are counted by result" reloads_counted

# --- a full disk under the log -----------------------------------------------------------------
world_stop_airlock
mkdir -p "$W/full"
mount -t tmpfs -o size=64k tmpfs "$W/full"
trap 'umount "$W/full" 2>/dev/null || true; world_down' EXIT
# Fails closed by default (log.when_unwritable: refuse, ROBUSTNESS E6): what cannot be
# recorded does not go out. `pass` lets traffic go on and only counts the lost lines.
fill_log_disk() {
  dd if=/dev/zero of="$W/full/filler" bs=4k 2>/dev/null || true  # until ENOSPC
  # The file's last page may still hold a few lines; enough queries to need more than it has.
  for _ in $(seq 12); do world_sbx dig +time=2 +tries=1 +short @"$GW_SBX_IP" unlisted.airlock.test >/dev/null || true; done
}
dropped() { metrics | sed -n 's/^airlock_log_dropped_total \([0-9]*\).*/\1/p'; }
wait_dropped() { for _ in $(seq 50); do [[ $(dropped) -ge 2 ]] && return 0; sleep 0.1; done; return 1; }
# Once room is back, the first line written tells the log it can record again. That line is
# a refusal (every line since the disk filled is one): the dig's, when the writer had not
# tried it yet (it backs off 100 ms after a failed write), else the first curl's below.
works_within() {
  for _ in 1 2 3 4 5; do
    [[ $(sbx_curl $(r listed) https://listed.airlock.test/ 2>/dev/null) == "origin says hello to listed.airlock.test" ]] && return 0
    sleep 0.2
  done
  return 1
}
# dropped_settled: airlock_log_dropped_total once two reads 0.3 s apart agree (a failed write
# adds its batch to it when it fails).
dropped_settled() {
  local a b
  b=$(dropped)
  for _ in $(seq 20); do
    sleep 0.3
    a=$b b=$(dropped)
    [[ $a == "$b" ]] && break
  done
  echo "$b"
}
# log_dropped_lines FILE FROM TOTAL: the log_dropped lines of FILE past its first FROM lines
# have the contract's shape exactly ({"ts":RFC 3339 with microseconds,"schema":2,
# "event":"log_dropped","count":N}, compact, in that order, N > 0), and their counts add up
# to TOTAL, the lines the daemon counted lost (waits, bounded, for the writer). With
# --then-refusal, a limit:decision_log refusal is written after the first of them.
log_dropped_lines() {
  python3 - "$@" <<'PY'
import json, re, sys, time
args = sys.argv[1:]
then_refusal = "--then-refusal" in args
path, start, total = [a for a in args if a != "--then-refusal"]
start, total = int(start), int(total)
shape = re.compile(r'\{"ts":"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z","schema":2,"event":"log_dropped","count":([1-9][0-9]*)\}')
deadline = time.monotonic() + 5
while True:
    lines = open(path, encoding="utf-8").read().splitlines()[start:]
    dropped = [(i, l) for i, l in enumerate(lines) if json.loads(l).get("event") == "log_dropped"]
    counts = [json.loads(l)["count"] for _, l in dropped]
    if (dropped and sum(counts) == total) or time.monotonic() > deadline:
        break
    time.sleep(0.2)
problems = []
for _, l in dropped:
    print(l)
    if not shape.fullmatch(l) or list(json.loads(l)) != ["ts", "schema", "event", "count"]:
        problems.append(f"not the contract's shape: {l}")
if not dropped:
    problems.append("no log_dropped line")
if total <= 0 or sum(counts) != total:
    problems.append(f"the counts add up to {sum(counts)}, the daemon counted {total} lines lost")
if then_refusal and dropped:
    after = [json.loads(l) for l in lines[dropped[0][0] + 1:]]
    if not any(o.get("reason") == "limit_exceeded" and "limit:decision_log" in (o.get("notes") or []) for o in after):
        problems.append("no limit:decision_log refusal after the first log_dropped line")
print("\n".join(problems) or f"{len(dropped)} log_dropped line(s), {total} lines in all")
sys.exit(1 if problems else 0)
PY
}
write_config "$W/full/decisions.jsonl" listed.airlock.test
world_start_airlock -c "$W/airlock.yaml"
fill_log_disk
expect "with the log's disk full, the lines that cannot be written are counted" wait_dropped
expect_not "  and an allowed name is refused: its decision could not be recorded" \
  sbx_curl $(r listed) https://listed.airlock.test/
expect "  as is a DNS query for it (REFUSED)" bash -c \
  "ip netns exec $SBX dig +time=2 +tries=1 @$GW_SBX_IP listed.airlock.test | grep -q 'status: REFUSED'"
rm -f "$W/full/filler"
expect "once the disk has room, the allowed name works again" works_within
lost=$(dropped_settled)
expect "  log_dropped lines report the loss: the contract's fields, counts adding up to the $lost lost" \
  log_dropped_lines "$W/full/decisions.jsonl" 0 "$lost" --then-refusal
expect "  followed by the refusals that could be written, named limit:decision_log" \
  python3 "$here/lib/decisions.py" "$W/full/decisions.jsonl" verdict=deny reason=limit_exceeded \
  'notes~=limit:decision_log'
world_stop_airlock

write_config "$W/full/decisions.jsonl" listed.airlock.test
printf 'log:\n  decisions: %s\n  when_unwritable: pass\n' "$W/full/decisions.jsonl" >"$W/log-pass.yaml"
sed -i '/^log:/,/^  decisions:/d' "$W/airlock.yaml" && cat "$W/log-pass.yaml" >>"$W/airlock.yaml"
seen=$(wc -l <"$W/full/decisions.jsonl")
world_start_airlock -c "$W/airlock.yaml"
fill_log_disk
expect "with log.when_unwritable: pass and the disk full, an allowed name still works" \
  body_is "origin says hello to listed.airlock.test" sbx_curl $(r listed) https://listed.airlock.test/
expect_not "  and a denied one is still refused" sbx_curl $(r unlisted) https://unlisted.airlock.test/
rm -f "$W/full/filler"
lost=$(dropped_settled)
world_stop_airlock
expect "  the lines it lost ($lost) are reported by log_dropped lines by the time it has stopped" \
  log_dropped_lines "$W/full/decisions.jsonl" "$seen" "$lost"
check_summary
