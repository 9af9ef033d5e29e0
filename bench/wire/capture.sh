#!/usr/bin/env bash
# capture.sh TARGET N [PARALLEL] [TAG] : route the client's :443 to TARGET, warm up with
# 3 connections, then capture (tcpdump in the gateway, both veths: client leg and origin leg)
# while the client makes N connections. Out: $OUT/TARGET[TAG]/{gc,gs}.pcap, client.txt.
source "$(dirname "$0")/env.sh"
t=$1 n=$2 par=${3:-1} tag=${4:-}
o=$OUT/$t$tag
rm -rf "$o"; mkdir -p "$o"
"$WIRE_HERE/route.sh" "$t" || exit 1
"$WIRE_HERE/client.sh" 3 >"$o/warmup.txt"
sleep 2.5   # closed conntrack entries go (2 s), TIME_WAIT stays (harmless: new ports)
pids=()
for side in gc gs; do
  ifc=$IF_GC; [[ $side == gs ]] && ifc=$IF_GS
  timeout $((60 + n)) ip netns exec "$NS_G" tcpdump -i "$ifc" -n -s 200 -B 16384 -w "$o/$side.pcap" 'tcp or udp port 53' 2>"$o/$side.tcpdump.err" &
  pids+=($!)
done
for _ in $(seq 50); do grep -q listening "$o/gc.tcpdump.err" && grep -q listening "$o/gs.tcpdump.err" && break; sleep 0.1; done
sleep 0.3
"$WIRE_HERE/client.sh" "$n" "$par" >"$o/client.txt"
sleep 1.5
for p in "${pids[@]}"; do kill -INT "$p" 2>/dev/null; done
wait "${pids[@]}" 2>/dev/null
echo "$t$tag: $(cat "$o"/*.tcpdump.err | grep -E 'captured|dropped by kernel' | tr '\n' ' ')"
cat "$o/client.txt"
