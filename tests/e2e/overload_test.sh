#!/usr/bin/env bash
# Memory pressure (ROBUSTNESS D5), driven through overload.pressure_file as Envoy's
# injected resource monitor is: at 96 % new connections get a quarter of the peek timeout;
# at 99 % new connections and DNS queries are refused and logged (limit:memory) while a
# relayed download goes on to its end; the level comes down only a step lower
# (hysteresis), and the gauges follow. Then the real measure: a memory limit below what
# airlock holds refuses from the start.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
WORLD_RECORDS="listed.airlock.test 203.0.113.10"
WORLD_CERT_NAMES="listed.airlock.test"
source "$here/lib/world.sh"
source "$here/lib/check.sh"
world_up

start_with() {  # start_with 'overload key: value'...: (re)start airlock watching memory so
  world_stop_airlock
  world_airlock_config pressure-sandbox <<<'      - host: listed.airlock.test'
  sed -i 's/^listen:$/listen:\n  admin: 127.0.0.1:9901/' "$W/airlock.yaml"
  { echo "timeouts:"; echo "  peek: 4s"; echo "overload:"; for kv in "$@"; do echo "  $kv"; done; } >>"$W/airlock.yaml"
  : >"$W/decisions.jsonl"
  world_start_airlock -c "$W/airlock.yaml"
}
fetch() { sbx_curl --resolve "listed.airlock.test:443:$ORIGIN_IP" https://listed.airlock.test/ "$@"; }
works() { body_is "origin says hello to listed.airlock.test" fetch; }
status_of() { world_sbx dig +time=3 +tries=1 @"$GW_SBX_IP" "$1" | sed -n 's/.*status: \([A-Z]*\).*/\1/p'; }
gauge() { ip netns exec "$GW" curl -s http://127.0.0.1:9901/metrics | awk -v m="$1" '$1 == m { print $2 }'; }
pressure() {  # pressure VALUE LEVEL: writes the pressure; true once airlock has read it and is at LEVEL
  echo "$1" >"$W/pressure"
  for _ in $(seq 60); do
    [[ $(gauge airlock_memory_pressure) == "$1" && $(gauge airlock_overload_level) == "$2" ]] && return 0
    sleep 0.05
  done
  return 1
}
# Seconds until airlock cuts a connection that sent one byte of a ClientHello and stalls.
stalled_for() {
  world_sbx timeout 10 python3 -c '
import socket, sys, time
c = socket.create_connection((sys.argv[1], 443), timeout=8)
c.sendall(b"\x16"); t = time.monotonic()
try:
    while c.recv(64):
        pass
except ConnectionResetError:
    pass
print(round(time.monotonic() - t))' "$ORIGIN_IP"
}

echo 0.5 >"$W/pressure"
start_with "pressure_file: $W/pressure"
expect "at 50 % all is normal: airlock serves" works
expect "  and says level 0" test "$(gauge airlock_overload_level)" = 0

expect "at 96 % it shrinks" pressure 0.96 1
expect "  and says so once, with what it does" \
  grep -q 'memory pressure 96%: normal -> shrinking: new connections get a quarter of the peek and idle timeouts' \
  "$W/airlock.stderr"
expect "  a stalled ClientHello is cut after a quarter of the 4 s peek timeout" test "$(stalled_for)" -le 2
expect "  and it still serves" works

# A download that is relayed before the pressure rises (3 MB at 1 MB/s).
sbx_curl --max-time 20 --limit-rate 1M -r 0-2999999 --resolve "listed.airlock.test:443:$ORIGIN_IP" \
  -o "$W/during.bin" https://listed.airlock.test/big.bin &
download=$!
sleep 0.5
expect "at 99 % it refuses" pressure 0.99 2
expect_not "  a new connection" fetch
expect "  logged as limit_exceeded, limit:memory" \
  line event=connect verdict=deny reason=limit_exceeded 'notes~=limit:memory'
# One at a time, each read to its end (airlock's reset): a connection the kernel completed
# is one airlock accepts, so each must have its line, whatever became of the others.
made=$(world_sbx timeout 30 python3 -c '
import socket, sys
made = 0
for _ in range(20):
    try:
        c = socket.create_connection((sys.argv[1], 443), timeout=2)
    except OSError:
        continue
    made += 1
    try:
        while c.recv(64):
            pass
    except OSError:
        pass
    c.close()
print(made)' "$ORIGIN_IP" || echo 0)
echo "  ($made of 20 connections completed)"
# At least: a connection whose handshake the client gave up on may still have reached
# airlock's accept queue, and is logged too.
logged_refusals() { grep '"event":"connect"' "$W/decisions.jsonl" | grep -c '"limit:memory"' || true; }
for _ in $(seq 50); do (($(logged_refusals) >= 1 + made)) && break; sleep 0.1; done
echo "  ($(logged_refusals) lines with limit:memory)"
expect "  every one of them has its line: every refusal is logged (ROBUSTNESS F4)" \
  test "$(logged_refusals)" -ge $((1 + made))
expect "  (at least one was made, so the count means something)" test "$made" -ge 1
expect "  and a DNS query: REFUSED" test "$(status_of listed.airlock.test)" = REFUSED
expect "  logged as limit_exceeded, limit:memory" \
  line event=dns verdict=deny reason=limit_exceeded 'notes~=limit:memory'
expect "at 96 % it still refuses (it comes down only below 95 %)" pressure 0.96 2
expect_not "  a new connection" fetch
download_rc=0
wait "$download" || download_rc=$?
expect "the download relayed all along finishes whole" \
  test "$download_rc" -eq 0 -a "$(stat -c %s "$W/during.bin" 2>/dev/null || echo 0)" -eq 3000000
expect "at 93 % it is back to shrinking" pressure 0.93 1
expect "  and serves" works
expect "at 50 % it is back to normal" pressure 0.5 0
expect "  and a stalled ClientHello gets the whole 4 s again" test "$(stalled_for)" -ge 3
expect "  the gauge says the pressure" test "$(gauge airlock_memory_pressure)" = 0.5

# The real measure: resident memory over a limit of 1 MiB (airlock holds more than that).
start_with "memory_limit: 1M"
said_refusing() {
  for _ in $(seq 40); do grep -q 'memory pressure [0-9]*%: normal -> refusing' "$W/airlock.stderr" && return 0; sleep 0.05; done
  return 1
}
expect "with a memory limit below what it holds, airlock says it refuses" said_refusing
expect_not "  and refuses a new connection" fetch
expect "  logged as limit:memory" line event=connect verdict=deny reason=limit_exceeded 'notes~=limit:memory'
check_summary
