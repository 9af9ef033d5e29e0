#!/usr/bin/env bash
# What `airlock run` adds to a command's wall time, with a running daemon and with the
# embedded one, against the floors (bubblewrap alone; a network namespace made and
# removed with ip), then N sandboxes in a row and what they leave behind.
#
#   launcher/bench_startup.sh [AIRLOCK] [RUNS] [LOOP]     (root)
#
# Everything happens in a gateway namespace made here (addresses from 198.18.0.0/15 inside
# it only) and is removed on exit. Use a release build: the sanitizer build is 10x slower.
set -euo pipefail
AIRLOCK=${1:-build/release/app/airlock}
RUNS=${2:-50}
LOOP=${3:-1000}
AIRLOCK=$(readlink -f "$AIRLOCK")
[[ $(id -u) -eq 0 ]] || { echo "needs root"; exit 77; }
for tool in bwrap nsenter ip python3; do command -v "$tool" >/dev/null || { echo "missing $tool"; exit 77; }; done

GW=alb$(printf '%04x' $((RANDOM % 65536)))-gw
D=$(mktemp -d /tmp/airlock-bench.XXXXXX)
DAEMON=
cleanup() {
  [[ -n $DAEMON ]] && kill "$DAEMON" 2>/dev/null && wait "$DAEMON" 2>/dev/null || true
  ip netns del "$GW" 2>/dev/null || true
  rm -rf "$D"
}
trap cleanup EXIT
ip netns add "$GW"
ip -n "$GW" link set lo up
cat >"$D/airlock.yaml" <<YAML
version: 1
listen:
  proxy: 0.0.0.0:15001
  dns: 0.0.0.0:15053
  control: $D/control.sock
upstream_dns: [127.0.0.1]
log:
  decisions: $D/decisions.jsonl
policies:
  closed:
    allow:
      - host: nothing.airlock.test
default_policy: closed
YAML
ip netns exec "$GW" "$AIRLOCK" daemon -c "$D/airlock.yaml" 2>"$D/daemon.err" &
DAEMON=$!
for _ in $(seq 100); do [[ -S $D/control.sock ]] && break; sleep 0.05; done
[[ -S $D/control.sock ]] || { cat "$D/daemon.err"; exit 1; }

mkdir -p "$D/proj" && cd "$D/proj"
in_gw="nsenter --net=/run/netns/$GW"
# Interleaved, not one command after the other (as hyperfine does): on a shared machine
# the load drifts, and each round measures every command under the same conditions.
python3 - "$RUNS" <<PY
import statistics, subprocess, sys, time
runs = int(sys.argv[1])
cmds = {
    "true": "$in_gw true",
    "bwrap (floor)": "$in_gw bwrap --ro-bind / / --unshare-pid --die-with-parent true",
    "ip netns add+del (floor)": "ip netns add $GW-x && ip netns del $GW-x",
    "airlock run, daemon": "$in_gw $AIRLOCK run --control $D/control.sock -- true",
    "airlock run, embedded": "$in_gw $AIRLOCK run --control $D/none.sock -c $D/airlock.yaml -- true",
}
times = {k: [] for k in cmds}
for i in range(runs + 3):
    for name, cmd in cmds.items():
        t = time.perf_counter()
        subprocess.run(cmd, shell=True, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if i >= 3:  # warm-up rounds
            times[name].append((time.perf_counter() - t) * 1000)
base = statistics.median(times["true"])
print(f"{'command':28} {'median ms':>10} {'over true':>10}  (p10..p90 ms)")
for name, t in times.items():
    q = statistics.quantiles(t, n=10)
    print(f"{name:28} {statistics.median(t):10.1f} {statistics.median(t) - base:10.1f}  ({q[0]:.1f}..{q[-1]:.1f})")
PY
AIRLOCK_TIMINGS=1 $in_gw "$AIRLOCK" run --control "$D/control.sock" -- true 2>&1 | grep timings || true

count() {
  local netns veth nft cg state
  netns=$(find /run/netns -maxdepth 1 -name 'airlock-*' | wc -l)
  veth=$(ip -n "$GW" -o link show | grep -c ': airlock[0-9a-f]\{8\}[@:]' || true)
  nft=$(ip netns exec "$GW" nft list tables | grep -c 'airlock_[0-9a-f]\{8\}$' || true)
  cg=$( (find /sys/fs/cgroup/*/airlock -mindepth 1 -maxdepth 1 -type d 2>/dev/null; find /sys/fs/cgroup -maxdepth 5 -type d -name 'airlock-*' 2>/dev/null) | wc -l)
  state=$(find /run/airlock/sandboxes -name '*.state' 2>/dev/null | wc -l)
  echo "netns=$netns veth=$veth nft=$nft cgroup=$cg state=$state"
}
# The veths of the runs above go in the background: let them.
for _ in $(seq 50); do before=$(count); [[ $before == *" veth=0 "* ]] && break; sleep 0.1; done
start=$(date +%s%N)
failed=0
for i in $(seq "$LOOP"); do
  $in_gw "$AIRLOCK" run --control "$D/control.sock" --pids 64 -- true 2>/dev/null || failed=$((failed + 1))
  (( ($(date +%s%N) - start) / 1000000000 < 600 )) || { echo "stopped after $i runs (10 minutes)"; break; }
done
# The last sandbox's veth goes when the kernel has destroyed its namespace: give it 5 s.
for _ in $(seq 50); do after=$(count); [[ $after == "$before" ]] && break; sleep 0.1; done
echo "$LOOP runs with --pids 64 in $(( ($(date +%s%N) - start) / 1000000 )) ms, $failed failed"
echo "before: $before"
echo "after:  $after"
[[ $before == "$after" && $failed -eq 0 ]]
