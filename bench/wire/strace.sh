#!/usr/bin/env bash
# strace.sh TARGET N : route :443 to TARGET, warm up, then
#   1. strace -f -c on every thread of the proxy (all processes: nginx's workers) while the
#      client makes N sequential connections -> $OUT/strace-TARGET/strace-c.txt (divide by N)
#   2. strace -f -tt -T -yy for ONE connection -> $OUT/strace-TARGET/strace-one.txt
source "$(dirname "$0")/env.sh"
t=$1 n=$2
o=$OUT/strace-$t
rm -rf "$o"; mkdir -p "$o"
read -ra pids <<<"$(proxy_pids "$t")"
((${#pids[@]})) || { echo "no proxy process for $t" >&2; exit 1; }
popts=(); for p in "${pids[@]}"; do popts+=(-p "$p"); done
"$WIRE_HERE/route.sh" "$t" || exit 1
"$WIRE_HERE/client.sh" 5 >"$o/warmup.txt"
sleep 2.5
run_traced() {  # OUTFILE N STRACE-OPTS...
  local f=$1 k=$2; shift 2
  timeout $((60 + k)) strace -f "$@" -o "$f" "${popts[@]}" 2>"$f.err" &
  local sp=$!
  sleep 1.5   # attach
  "$WIRE_HERE/client.sh" "$k" >>"$o/client.txt"
  sleep 1
  kill -INT "$sp"; wait "$sp" 2>/dev/null
}
run_traced "$o/strace-c.txt" "$n" -c -S calls
sleep 2.5
run_traced "$o/strace-one.txt" 1 -tt -T -yy -s 0
echo "pids: ${pids[*]}" >"$o/pids.txt"
echo "strace-$t: $(tr -s ' ' <"$o/client.txt" | tr '\n' ' ')"
