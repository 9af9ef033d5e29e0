#!/usr/bin/env bash
# Caps and budgets: past a session's limit the answer is a logged deny (limit_exceeded, the
# note names the limit), never a stall or a crash; at a daemon-wide cap new connections wait
# in the listen queue and are served when a place frees; an upload that spends a session's
# byte budget is cut and its line says so; and airlock goes on serving within the limits.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
WORLD_RECORDS="listed.airlock.test 203.0.113.10"
WORLD_CERT_NAMES="listed.airlock.test"
source "$here/lib/world.sh"
source "$here/lib/check.sh"
world_up

start_with_limits() {  # start_with_limits 'key: value'...: restart airlock with these limits
  world_stop_airlock
  world_airlock_config limits-sandbox <<<'      - host: listed.airlock.test'
  { echo "limits:"; for kv in "$@"; do echo "  $kv"; done; } >>"$W/airlock.yaml"
  sed -i 's/^listen:$/listen:\n  admin: 127.0.0.1:9901/' "$W/airlock.yaml"
  : >"$W/decisions.jsonl"
  world_start_airlock -c "$W/airlock.yaml"
}
fetch() { sbx_curl --resolve "listed.airlock.test:443:$ORIGIN_IP" https://listed.airlock.test/ "$@"; }
works() { body_is "origin says hello to listed.airlock.test" fetch; }
# Holds N connections that say nothing (so they stay in the handshake) for S seconds.
hold() {
  rm -f "$W/held"
  world_sbx python3 -c '
import socket, sys, time
held = [socket.create_connection((sys.argv[1], 443), timeout=5) for _ in range(int(sys.argv[2]))]
open(sys.argv[4], "w").close()
time.sleep(float(sys.argv[3]))' "$ORIGIN_IP" "$1" "$2" "$W/held" &
  HOLDER=$!
  for _ in $(seq 300); do [[ -e $W/held ]] && break; sleep 0.05; done
  sleep 0.2  # the accepts are on airlock's loop by now
}

start_with_limits 'session_connections: 2'
hold 2 3
expect_not "a third connection while a session holds its 2 is refused" fetch
expect "  logged as limit_exceeded, session_connections" \
  line event=connect verdict=deny reason=limit_exceeded 'notes~=limit:session_connections'
wait "$HOLDER" || true
expect "once they close, the session connects again" works

# The daemon-wide caps: at one, the listener stops accepting and the kernel's queue holds
# new connections (as HAProxy's maxconn does); nothing is reset, and the queued connection
# is served once a place is free.
pauses() {
  ip netns exec "$GW" curl -s --max-time 5 http://127.0.0.1:9901/metrics |
    awk '$1 == "airlock_accept_pauses_total" {print $2 + 0}'
}
for cap in connections pending_handshakes; do
  start_with_limits "$cap: 2"
  hold 2 3
  t0=$(date +%s%N)
  expect "a third connection while airlock is at $cap (2) waits in the listen queue, then is served" works
  waited=$((($(date +%s%N) - t0) / 1000000))
  expect "  it waited for a place (${waited} ms)" test "$waited" -ge 300
  expect "  nothing was refused" line --count 0 --wait 1 reason=limit_exceeded
  expect "  the pause is said once on stderr" test "$(grep -c "at limits.$cap: new connections wait" "$W/airlock.stderr")" = 1
  expect "  and counted in /metrics (airlock_accept_pauses_total: $(pauses))" test "$(pauses)" -ge 1
  wait "$HOLDER" || true
  expect "  afterwards connections are accepted at once again" works
done

# The same cap per session: a session's silent connections cannot take every daemon-wide
# slot (unit tests show another session admitted meanwhile; this world has one sandbox).
start_with_limits 'session_pending_handshakes: 2'
hold 2 3
expect_not "a third connection while the session has 2 handshakes pending is refused" fetch
expect "  logged as limit_exceeded, session_pending_handshakes" \
  line event=connect verdict=deny reason=limit_exceeded 'notes~=limit:session_pending_handshakes'
wait "$HOLDER" || true
expect "once they are judged, the session connects again" works

start_with_limits 'session_connections_per_second: 1'
# At once, so the burst is a burst however slow this machine is today.
pids=()
for _ in 1 2 3 4 5 6; do fetch -o /dev/null 2>/dev/null & pids+=($!); done
wait "${pids[@]}" || true
expect "a burst of 6 new connections at 1/s (burst 2) is cut down to size" \
  line event=connect verdict=deny reason=limit_exceeded 'notes~=limit:session_connections_per_second'
expect "  the first ones went through" line event=connect verdict=allow reason=host_allowed

start_with_limits 'session_bytes_up: 64K'
head -c 300000 /dev/urandom >"$W/upload.bin"
# To a location that reads the whole body: nginx's "return" may answer and close before
# the budget is reached. No -f: a body read whole answers 502, which curl takes as success.
sink() { sbx_curl --resolve "listed.airlock.test:443:$ORIGIN_IP" https://listed.airlock.test/sink "$@"; }
expect_not "an upload past the session's 64 KiB budget is cut" sink -X POST --data-binary @"$W/upload.bin"
expect "  its line says so, with the bytes that passed" \
  line event=close verdict=deny reason=limit_exceeded 'notes~=cut_open_connection' 'notes~=limit:session_bytes_up'
expect "  and no more than the budget and one chunk reached the origin" python3 -c '
import json, sys
cut = [json.loads(l) for l in open(sys.argv[1]) if "cut_open_connection" in l]
sys.exit(0 if cut and 65536 < cut[0]["bytes_up"] <= 65536 + 65536 else 1)' "$W/decisions.jsonl"
expect "  in fact one byte past the budget, beside the ClientHello sent before the relay" python3 -c '
import json, sys
cut = [json.loads(l) for l in open(sys.argv[1]) if "cut_open_connection" in l]
print(cut[0]["bytes_up"] if cut else "no cut line", file=sys.stderr)
sys.exit(0 if cut and 65536 < cut[0]["bytes_up"] <= 65536 + 1 + 4096 else 1)' "$W/decisions.jsonl"
expect_not "the spent budget refuses the session's next connection" fetch
expect "  at admission" line --count 1 event=connect reason=limit_exceeded bytes_up=null 'notes~=limit:session_bytes_up'

start_with_limits 'session_bytes_down: 64K'
expect_not "a download past the session's 64 KiB budget is cut" \
  sbx_curl --resolve "listed.airlock.test:443:$ORIGIN_IP" https://listed.airlock.test/big.bin -o "$W/big.part"
expect "  its line says so" \
  line event=close verdict=deny reason=limit_exceeded 'notes~=cut_open_connection' 'notes~=limit:session_bytes_down'
expect "  with no more than the budget and one byte passed down" python3 -c '
import json, sys
cut = [json.loads(l) for l in open(sys.argv[1]) if "cut_open_connection" in l]
print(cut[0]["bytes_down"] if cut else "no cut line", file=sys.stderr)
sys.exit(0 if cut and 65536 < cut[0]["bytes_down"] <= 65536 + 1 else 1)' "$W/decisions.jsonl"
expect "  and the client got less than the file" test "$(stat -c %s "$W/big.part" 2>/dev/null || echo 0)" -lt 5000000
expect_not "the spent budget refuses the session's next connection" fetch
expect "  at admission" line --count 1 event=connect reason=limit_exceeded bytes_down=null 'notes~=limit:session_bytes_down'
kill -0 "$AIRLOCK_PID"
expect "airlock is still serving (its DNS answers)" \
  world_sbx dig +time=2 +tries=1 +short @"$GW_SBX_IP" listed.airlock.test

# Out of descriptors (ROBUSTNESS D1): airlock under a hard limit of 64 open files. The
# connections waiting past what it can hold are reset at accept, not left in the queue,
# logged, and warned about once; it accepts again once descriptors are free.
printf '#!/bin/sh\nexec prlimit --nofile=64:64 "%s" "$@"\n' "$AIRLOCK" >"$W/airlock-64-fds"
chmod +x "$W/airlock-64-fds"
airlock_itself=$AIRLOCK
AIRLOCK=$W/airlock-64-fds start_with_limits 'connections: 1000'
AIRLOCK=$airlock_itself
expect "under 64 descriptors it says at start that they hold fewer connections than its cap" \
  grep -q 'open-files limit (64) holds about 0 relayed connections' "$W/airlock.stderr"
hold 80 3
expect "the connections it cannot take are reset at accept and logged as limit:open_files" \
  line event=connect verdict=deny reason=limit_exceeded session=limits-sandbox 'notes~=limit:open_files'
expect "  and it says so once, with what to do" \
  test "$(grep -c 'out of file descriptors: .* reset at accept' "$W/airlock.stderr")" -eq 1
wait "$HOLDER" || true
expect "once descriptors are free, it serves again" works
check_summary
