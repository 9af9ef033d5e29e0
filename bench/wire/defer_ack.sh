#!/usr/bin/env bash
# defer_ack.sh N : does TCP_DEFER_ACCEPT on a *connecting* socket merge the handshake's last
# ACK with the first data? With no proxy in the way (route direct), defer_ack_test.py in the
# client namespace makes N connections to the origin's :443 shaped like airlock's upstream
# connect (non-blocking connect, 517 bytes sent as soon as the socket takes them), once
# without the option and once with it, while tcpdump captures the client leg in the gateway.
# Out: $OUT/defer-0-dir, $OUT/defer-1-dir ({gc,gs}.pcap) and defer.txt (first packets
# after the SYN-ACK, per connection: "S SA . 517" = separate ACK, "S SA 517" = merged).
source "$(dirname "$0")/env.sh"
n=${1:-20}
"$WIRE_HERE/route.sh" direct || exit 1
for defer in 0 1; do
  o=$OUT/defer-$defer-dir; rm -rf "$o"; mkdir -p "$o"
  pids=()
  for side in gc gs; do
    ifc=$IF_GC; [[ $side == gs ]] && ifc=$IF_GS
    timeout $((30 + n)) ip netns exec "$NS_G" tcpdump -i "$ifc" -n -s 200 -w "$o/$side.pcap" tcp port 443 2>"$o/$side.err" & pids+=($!)
  done
  for _ in $(seq 50); do grep -q listening "$o/gc.err" && grep -q listening "$o/gs.err" && break; sleep 0.1; done
  timeout $((20 + n)) ip netns exec "$NS_C" python3 "$WIRE_HERE/defer_ack_test.py" "$IP_S" 443 "$defer" "$n"
  sleep 1
  for p in "${pids[@]}"; do kill -INT "$p" 2>/dev/null; done; wait "${pids[@]}" 2>/dev/null
done
python3 -B - "$OUT" "$WIRE_HERE" <<'PY' | tee "$OUT/defer.txt"
import collections, sys
sys.path.insert(0, sys.argv[2])
import analyze
for d in (0, 1):
    conns = analyze.split_conns(analyze.read_pcap(f"{sys.argv[1]}/defer-{d}-dir/gc.pcap"))
    seqs = collections.Counter()
    for c in conns:
        toks = []
        for p in c.pkts[:4]:
            f = p["flags"]
            toks.append("S" if f & 2 and not f & 16 else "SA" if f & 2 else "R" if f & 4 else
                        str(p["len"]) if p["len"] else "F" if f & 1 else ".")
        seqs[" ".join(toks)] += 1
    print(f"TCP_DEFER_ACCEPT={d}: {len(conns)} connections: " + ", ".join(f"{s!r} {n}" for s, n in seqs.most_common()))
PY
