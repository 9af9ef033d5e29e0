#!/usr/bin/env bash
# wrkload.sh TARGET SECONDS [TAG] : a load shape of many connections at once (wrk -t2 -c32,
# Connection: close, a new TLS 1.3 connection per request, 1 KiB page) for SECONDS, with
# tcpdump on both gateway veths and perf stat on client (wrk), origin and proxy.
# The name resolves through a private mount namespace's /etc/hosts (unshare -m + bind
# mount: nothing written to the root namespace's /etc). Bounded by timeout.
# Out: $OUT/TARGET-wrk[TAG]/ and $OUT/perf-TARGET-wrk[TAG]/
source "$(dirname "$0")/env.sh"
t=$1 secs=${2:-2} tag=${3:-}
o=$OUT/$t-wrk$tag; po=$OUT/perf-$t-wrk$tag
rm -rf "$o" "$po"; mkdir -p "$o" "$po"
printf '127.0.0.1 localhost\n%s %s\n' "$IP_S" "$HOST_OK" >"$W/tmp/hosts-client"
EV=sched:sched_waking,ipi:ipi_send_cpu,net:netif_receive_skb,net:net_dev_xmit,irq:softirq_entry,tcp:tcp_retransmit_skb,context-switches,task-clock
proxy=$(proxy_pids "$t")
origin=$(kids "$(pid_of origin)")
"$WIRE_HERE/route.sh" "$t" || exit 1
"$WIRE_HERE/client.sh" 5 >"$o/warmup.txt"
sleep 2.5
pids=()
for side in gc gs; do
  ifc=$IF_GC; [[ $side == gs ]] && ifc=$IF_GS
  timeout $((30 + secs)) ip netns exec "$NS_G" tcpdump -i "$ifc" -n -s 200 -B 65536 -w "$o/$side.pcap" 'tcp or udp port 53' 2>"$o/$side.tcpdump.err" &
  pids+=($!)
done
for _ in $(seq 50); do grep -q listening "$o/gc.tcpdump.err" && grep -q listening "$o/gs.tcpdump.err" && break; sleep 0.1; done
timeout $((30 + secs)) perf stat -e "$EV" -x, -o "$po/origin.csv" -p "$(echo $origin | tr ' ' ,)" 2>/dev/null & pids+=($!)
[[ -n $proxy ]] && { timeout $((30 + secs)) perf stat -e "$EV" -x, -o "$po/proxy.csv" -p "$(echo $proxy | tr ' ' ,)" 2>/dev/null & pids+=($!); }
sleep 0.5
timeout $((20 + secs)) ip netns exec "$NS_C" unshare -m sh -c "mount --bind $W/tmp/hosts-client /etc/hosts && exec perf stat -e $EV -x, -o $po/client.csv -- wrk -t2 -c32 -d${secs}s -H 'Connection: close' https://$HOST_OK/small.html" >"$o/wrk.txt" 2>&1
sleep 1.5
for p in "${pids[@]}"; do kill -INT "$p" 2>/dev/null; done
wait "${pids[@]}" 2>/dev/null
echo "$t-wrk$tag: $(grep -E 'requests in|Socket errors|Non-2xx' "$o/wrk.txt" | tr -s ' ' | tr '\n' ' ') $(cat "$o"/*.tcpdump.err | grep -E 'dropped by kernel' | tr '\n' ' ')"
