#!/usr/bin/env bash
# perfcount.sh TARGET N [PARALLEL] [TAG] : kernel event counts, per role, while the client
# makes N connections through TARGET: perf stat on the client (curl, with everything the
# kernel does in its context: softirq processing of the packets its sends put on the veth,
# which on a veth runs in the sender's context), on the origin nginx (master + workers) and
# on the proxy's threads. Out: $OUT/perf-TARGET[TAG]/{client,origin,proxy}.csv
source "$(dirname "$0")/env.sh"
t=$1 n=$2 par=${3:-1} tag=${4:-}
o=$OUT/perf-$t$tag
rm -rf "$o"; mkdir -p "$o"
EV=sched:sched_waking,ipi:ipi_send_cpu,sched:sched_wakeup,net:netif_receive_skb,net:net_dev_xmit,irq:softirq_entry,tcp:tcp_retransmit_skb,context-switches,task-clock
proxy=$(proxy_pids "$t")
origin=$(kids "$(pid_of origin)")
"$WIRE_HERE/route.sh" "$t" || exit 1
"$WIRE_HERE/client.sh" 5 >"$o/warmup.txt"
sleep 2.5
pp=()
timeout $((60 + n)) perf stat -e "$EV" -x, -o "$o/origin.csv" -p "$(echo $origin | tr ' ' ,)" 2>/dev/null & pp+=($!)
if [[ -n $proxy ]]; then
  timeout $((60 + n)) perf stat -e "$EV" -x, -o "$o/proxy.csv" -p "$(echo $proxy | tr ' ' ,)" 2>/dev/null & pp+=($!)
fi
sleep 1
CLIENT_WRAP="perf stat -e $EV -x, -o $o/client.csv --" "$WIRE_HERE/client.sh" "$n" "$par" >"$o/client.txt"
sleep 1
for p in "${pp[@]}"; do kill -INT "$p" 2>/dev/null; done
wait "${pp[@]}" 2>/dev/null
echo "perf-$t$tag: $(tr -s ' ' <"$o/client.txt" | tr '\n' ' ')"
