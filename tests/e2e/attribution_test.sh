#!/usr/bin/env bash
# Process attribution end to end: a network namespace with a python3 client started by sh,
# connected to a listener there and holding a UDP socket towards "DNS"; attribution_probe,
# from the root namespace, must name python3 then sh, and stop at the namespace's edge.
# Also measures the lookup latency with ~20 processes in the namespace (printed, not asserted).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
: "${AIRLOCK_ATTRIBUTION_PROBE:?set AIRLOCK_ATTRIBUTION_PROBE to the attribution_probe binary}"
PROBE=$AIRLOCK_ATTRIBUTION_PROBE
# Without root the test cannot run: exit 77, which ctest reports as skipped (never as passed).
if [[ $(id -u) -ne 0 ]]; then echo "needs root (network namespaces, setns)"; exit 77; fi
for tool in ip python3; do command -v "$tool" >/dev/null || { echo "missing $tool"; exit 77; }; done

NS=al$(printf '%04x' $((RANDOM % 65536)))-attr
W=$(mktemp -d /tmp/airlock-e2e-attr.XXXXXX)
ADDR=198.51.100.7
PIDS=()
source "$here/lib/check.sh"

cleanup() {
  local pid
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${PIDS[@]}"; do
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
  done
  ip netns del "$NS" 2>/dev/null || true
  rm -rf "$W"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# waits (bounded) until FILE exists and is not empty
wait_file() { for _ in $(seq 100); do [[ -s $1 ]] && return 0; sleep 0.05; done; echo "no $1" >&2; return 1; }

ip netns add "$NS"
ip -n "$NS" link set lo up
ip -n "$NS" addr add "$ADDR/32" dev lo  # only inside the namespace

# The listener: accepts and holds connections; stops by itself after 120 s.
ip netns exec "$NS" timeout 120 python3 -c '
import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], 8443)); s.listen(16)
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u.bind((sys.argv[1], 53))
open(sys.argv[2], "w").write("ready\n")
held = []
while True:
    c, _ = s.accept(); held.append(c)
' "$ADDR" "$W/listener.ready" &
PIDS+=($!)
wait_file "$W/listener.ready"

# The client, as a sandboxed tool would run: sh starts python3 (and waits for it, so sh stays
# its parent). python3 connects, sends one datagram to "DNS" from an unconnected socket, writes
# "pid tcp_port udp_port" and sleeps.
CLIENT_PY='
import os, socket, sys, time
t = socket.create_connection((sys.argv[1], 8443))
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u.bind((sys.argv[1], 0))
u.sendto(b"\x12\x34", (sys.argv[1], 53))
with open(sys.argv[2] + ".tmp", "w") as f:
    f.write("%d %d %d\n" % (os.getpid(), t.getsockname()[1], u.getsockname()[1]))
os.rename(sys.argv[2] + ".tmp", sys.argv[2])
time.sleep(120)
'
ip netns exec "$NS" timeout 150 sh -c 'python3 -c "$1" "$2" "$3"; echo "client exited $?" >&2' client \
  "$CLIENT_PY" "$ADDR" "$W/client.info" 2>>"$W/client.stderr" &
PIDS+=($!)
wait_file "$W/client.info"
read -r CLIENT_PID TCP_PORT UDP_PORT <"$W/client.info"

# About 20 processes in the namespace, so the latency below is for a realistic sandbox.
for _ in $(seq 17); do ip netns exec "$NS" sleep 120 & PIDS+=($!); done

probe() { "$PROBE" "$@" 2>>"$W/probe.stderr" || true; }
# chain_is JSON PID COMM... : chain[0].pid is PID and the chain's comms are exactly COMM...
chain_is() {
  python3 - "$@" <<'PY'
import json, sys
got, pid, comms = json.loads(sys.argv[1]), int(sys.argv[2]), sys.argv[3:]
chain = got.get("chain", [])
print(json.dumps(got))
assert got.get("pid") == pid, f"pid {got.get('pid')} != {pid}"
assert [p["comm"] for p in chain] == comms, [p["comm"] for p in chain]
assert chain[0]["pid"] == pid and got["comm"] == chain[0]["comm"] and got["cmdline"] == chain[0]["cmdline"]
assert "python3 -c" in chain[0]["cmdline"], chain[0]["cmdline"]  # argv[0] may be a full path
assert chain[1]["cmdline"].startswith("sh -c python3"), chain[1]["cmdline"]
assert chain[2]["cmdline"].startswith("timeout 150 sh -c"), chain[2]["cmdline"]
PY
}
unknown_is() { python3 -c 'import json,sys; g=json.loads(sys.argv[1]); print(g); assert g == {"unknown": sys.argv[2]}' "$@"; }

# The chain is python3 <- sh <- timeout: `ip netns exec` execs timeout, the namespace's first
# process; its parent is this script, outside the namespace, where the chain must stop.
tcp_json=$(probe "/run/netns/$NS" tcp "$ADDR:$TCP_PORT" "$ADDR:8443")
expect "TCP: the connection belongs to python3, started by sh; the chain stops at the namespace" \
  chain_is "$tcp_json" "$CLIENT_PID" python3 sh timeout
udp_json=$(probe "/proc/$CLIENT_PID/ns/net" udp "$ADDR:$UDP_PORT" "$ADDR:53")
expect "UDP (unconnected, namespace named by /proc/PID/ns/net): the same processes" \
  chain_is "$udp_json" "$CLIENT_PID" python3 sh timeout
expect "no such socket: said so" unknown_is "$(probe "/run/netns/$NS" tcp "$ADDR:1" "$ADDR:8443")" "socket not found"
expect "no such namespace: said so" unknown_is "$(probe "/run/netns/$NS-gone" tcp "$ADDR:$TCP_PORT" "$ADDR:8443")" \
  "netns not available"
expect "the root namespace does not have the sandbox's socket" \
  unknown_is "$(probe /proc/self/ns/net tcp "$ADDR:$TCP_PORT" "$ADDR:8443")" "socket not found"

# Latency: 100 lookups one after another through finder + async_lookup (the first one opens
# the namespace and setns's; the others reuse its sock_diag socket).
: >"$W/probe.stderr"
probe "/run/netns/$NS" tcp "$ADDR:$TCP_PORT" "$ADDR:8443" --repeat 100 >/dev/null
echo "latency with $(ip netns pids "$NS" | wc -l) processes in the namespace, $(ls -d /proc/[0-9]* | wc -l) on the host: $(cat "$W/probe.stderr")"

# The client goes away: its sockets are gone or orphaned, and the probe says so.
kill "$CLIENT_PID"
for _ in $(seq 50); do kill -0 "$CLIENT_PID" 2>/dev/null || break; sleep 0.1; done
after=$(probe "/run/netns/$NS" tcp "$ADDR:$TCP_PORT" "$ADDR:8443")
expect "after the client exits: unknown, with a reason" \
  python3 -c 'import json,sys; g=json.loads(sys.argv[1]); print(g); assert g.get("unknown") in ("socket not found", "socket closed")' "$after"
check_summary
