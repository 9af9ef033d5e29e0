#!/usr/bin/env bash
# A connection's decision is written when it is made, not when the connection ends: a
# download that starts in one tool call and ends in the next is stamped with the first
# (its close line, with the bytes, with the second), and kill -9 of the daemon while
# connections are open leaves each one's decision line in the log.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
WORLD_RECORDS="slow.airlock.test 203.0.113.10
held.airlock.test 203.0.113.10"
WORLD_CERT_NAMES="slow.airlock.test held.airlock.test"
source "$here/lib/world.sh"
source "$here/lib/check.sh"
world_up

world_airlock_config cfg-timing <<'YAML'
      - host: slow.airlock.test
      - host: held.airlock.test
YAML
sed -i "s|^  dns: 0.0.0.0:15053|  dns: 0.0.0.0:15053\n  control: $W/control.sock|" "$W/airlock.yaml"
world_start_airlock -c "$W/airlock.yaml"
tool_call() {
  ip netns exec "$GW" curl -sS --max-time 5 --unix-socket "$W/control.sock" -o /dev/null -w '%{http_code}' \
    -X PUT -H 'Content-Type: application/json' -d '{"tool_call":"'"$1"'"}' http://airlock/v1/sessions/cfg-timing/context
}

# --- a download that outlives its tool call ------------------------------------------------
expect "tool call call-41 is set" test "$(tool_call call-41)" = 200
# 5 MB at 1 MB/s: about five seconds, with the tool call changed after one and a half.
world_sbx curl -sS --max-time 20 --cacert "$W/ca.crt" --limit-rate 1M -o "$W/slow.bin" \
  https://slow.airlock.test/big.bin &
download=$!
sleep 1.5
expect "tool call call-42 is set while the download runs" test "$(tool_call call-42)" = 200
changed_at=$(date -u +%s.%N)
expect "the download completes" wait "$download"
expect "  intact" cmp -s "$W/slow.bin" "$W/big.bin"
expect "its decision line is stamped with the tool call it was decided in (call-41)" \
  line --count 1 event=connect name=slow.airlock.test verdict=allow tool_call=call-41 bytes_down=null
expect "its close line, same conn, with the bytes and the tool call current at its end (call-42)" python3 - \
  "$W/decisions.jsonl" "$changed_at" <<'PY'
import datetime, json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
decided = [l for l in lines if l["event"] == "connect" and l["name"] == "slow.airlock.test"]
closed = [l for l in lines if l["event"] == "close" and l["name"] == "slow.airlock.test"]
print(decided, closed, sep="\n")
assert len(decided) == 1 and len(closed) == 1
d, c = decided[0], closed[0]
assert d["conn"] == c["conn"] and c["tool_call"] == "call-42" and c["verdict"] == "allow"
assert 5_000_000 <= c["bytes_down"] < 5_100_000 and c["duration_ms"] >= 3000
ts = lambda l: datetime.datetime.strptime(l["ts"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=datetime.timezone.utc).timestamp()
changed = float(sys.argv[2])
assert ts(d) < changed < ts(c), (ts(d), changed, ts(c))
assert d["schema"] == 2 and c["schema"] == 2
PY
expect "airlock explain joins the two lines and says both tool calls" python3 - \
  "$("$AIRLOCK" explain --log "$W/decisions.jsonl" cfg-timing 2>&1)" <<'PY'
import sys
story = sys.argv[1]
print(story)
want = ["connect tls slow.airlock.test", "tool call call-41", "closed ", "4.8 MiB down", "by then tool call call-42"]
missing = [w for w in want if w not in story]
sys.exit(f"missing from the story: {missing}" if missing else 0)
PY

# --- kill -9 with connections open ------------------------------------------------------------
# Three TLS connections, each handshaken through airlock and then held open, silent.
for i in 1 2 3; do
  world_sbx timeout 60 python3 -c '
import socket, ssl, sys, time
ctx = ssl.create_default_context(cafile=sys.argv[1])
s = ctx.wrap_socket(socket.create_connection(("held.airlock.test", 443), timeout=10), server_hostname="held.airlock.test")
open(sys.argv[2], "w").write("open\n")
time.sleep(50)' "$W/ca.crt" "$W/held-$i.ready" >/dev/null 2>&1 &
done
for _ in $(seq 100); do
  [[ -f $W/held-1.ready && -f $W/held-2.ready && -f $W/held-3.ready ]] && break
  sleep 0.1
done
expect "three connections are open through airlock" test -f "$W/held-3.ready" -a -f "$W/held-2.ready" -a -f "$W/held-1.ready"
sleep 0.5  # the log writer's linger (20 ms), with room to spare
kill -KILL "$AIRLOCK_PID"
wait "$AIRLOCK_PID" 2>/dev/null || true
alive=()
for pid in "${WORLD_PIDS[@]}"; do [[ $pid == "$AIRLOCK_PID" ]] || alive+=("$pid"); done
WORLD_PIDS=("${alive[@]}")
expect "after kill -9, each open connection's decision is in the log" \
  line --count 3 --wait 1 event=connect name=held.airlock.test verdict=allow reason=host_allowed tool_call=call-42
expect "  and no close line for them (they never closed)" \
  line --count 0 --wait 0 event=close name=held.airlock.test
expect "airlock explain says they have no close line" python3 - \
  "$("$AIRLOCK" explain --log "$W/decisions.jsonl" cfg-timing 2>&1)" <<'PY'
import sys
story = sys.argv[1]
sys.exit(0 if story.count("no close line") == 3 else story)
PY
check_summary
