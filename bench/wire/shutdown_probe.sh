#!/usr/bin/env bash
# shutdown_probe.sh TARGET N : airlock's shutdown(2) calls and their errors (strace -tt of
# shutdown/close/connect/accept4 only) beside a capture of both legs, to see what the wire
# looked like when shutdown said ENOTCONN. TARGET: airlock or airlock-tproxy.
# Out: $OUT/shutdown-TARGET/
source "$(dirname "$0")/env.sh"
t=$1 n=$2
o=$OUT/shutdown-$t; rm -rf "$o"; mkdir -p "$o"
"$WIRE_HERE/route.sh" "$t"; "$WIRE_HERE/client.sh" 3 >/dev/null; sleep 2.5
pids=()
for side in gc gs; do
  ifc=$IF_GC; [[ $side == gs ]] && ifc=$IF_GS
  timeout $((60 + n)) ip netns exec "$NS_G" tcpdump -i "$ifc" -n -s 200 -w "$o/$side.pcap" tcp 2>"$o/$side.err" & pids+=($!)
done
timeout $((60 + n)) strace -f -tt -e trace=shutdown,close,connect,accept4 -o "$o/strace.txt" -p "$(pid_of airlock)" 2>/dev/null & pids+=($!)
sleep 1.5; "$WIRE_HERE/client.sh" "$n"; sleep 1
for p in "${pids[@]}"; do kill -INT "$p" 2>/dev/null; done; wait "${pids[@]}" 2>/dev/null
echo "shutdown-$t: shutdown ok: $(grep -ac 'shutdown.*= 0' "$o/strace.txt") ENOTCONN: $(grep -ac 'shutdown.*ENOTCONN' "$o/strace.txt")"
