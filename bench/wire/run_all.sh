#!/usr/bin/env bash
# run_all.sh : the wire study in one go. Sets up the namespaces and servers, runs the chosen
# parts for each target, analyzes, writes the tables, and tears everything down on exit
# (trap). See bench/wire/README.md, or run_all.sh --help.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
usage() {
  cat <<'USAGE'
usage: sudo [AIRLOCK_BUILD=DIR] bench/wire/run_all.sh [options]

  -d, --dir DIR         the run's folder: DIR/work (configs, PKI, logs, PIDs) and DIR/out
                        (captures, summaries, tables); default: a new mktemp -d
  -n, --conns N         curl connections per target and part (default 200; strace traces N/2)
  -t, --targets LIST    space- or comma-separated, from: direct airlock airlock-tproxy haproxy
                        nginx floor (default: all six)
  -p, --parts LIST      comma-separated, from:
                          seq       N sequential connections, captured on both legs
                          par16     N connections 16 at a time, captured
                          wrk       wrk -t2 -c32 for S seconds, captured, perf stat per role
                          perf      perf stat per role over N curl connections, seq and par16
                          strace    strace -f -c over N/2 connections, strace -tt of one
                          defer     TCP_DEFER_ACCEPT on a connecting socket (20 + 20 connections)
                          shutdown  airlock's shutdown(2) errors beside a capture (side probe)
                        default: seq,par16,wrk,perf,strace,defer
  -r, --rounds R        rounds of seq and perf (default 3; targets interleaved per round)
  --wrk-rounds R        rounds of wrk (default 5)
  --wrk-seconds S       length of one wrk run (default 2)
  -q, --quick           a short check that everything works: -n 30 -r 1 --wrk-rounds 1
                        --wrk-seconds 1 (options after it override)
  -h, --help            this text

Environment: AIRLOCK_BUILD (default build/release at the repository's top: app/airlock and
bench/floor_relay in it; without bench/floor_relay, bench/floor_relay.cpp is compiled with
g++ into DIR/work), AIRLOCK / FLOOR (binaries, overriding AIRLOCK_BUILD's).
Needs root. Prints the run's folder first.
USAGE
}
N=200 ROUNDS=3 WRK_ROUNDS=5 WRK_SECS=2 DIR=""
TARGETS="direct airlock airlock-tproxy haproxy nginx floor"
PARTS="seq,par16,wrk,perf,strace,defer"
while (($#)); do
  case $1 in
    -d|--dir) DIR=$2; shift 2 ;;
    -n|--conns) N=$2; shift 2 ;;
    -t|--targets) TARGETS=${2//,/ }; shift 2 ;;
    -p|--parts) PARTS=$2; shift 2 ;;
    -r|--rounds) ROUNDS=$2; shift 2 ;;
    --wrk-rounds) WRK_ROUNDS=$2; shift 2 ;;
    --wrk-seconds) WRK_SECS=$2; shift 2 ;;
    -q|--quick) N=30 ROUNDS=1 WRK_ROUNDS=1 WRK_SECS=1; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "unknown option $1" >&2; usage >&2; exit 2 ;;
  esac
done
for v in N ROUNDS WRK_ROUNDS WRK_SECS; do
  [[ ${!v} =~ ^[1-9][0-9]*$ ]] || { echo "$v must be a positive whole number" >&2; exit 2; }
done
((N <= 5000 && WRK_SECS <= 60 && ROUNDS <= 20 && WRK_ROUNDS <= 20)) ||
  { echo "bounds: --conns <= 5000, --wrk-seconds <= 60, rounds <= 20" >&2; exit 2; }
for t in $TARGETS; do
  [[ " direct airlock airlock-tproxy haproxy nginx floor " == *" $t "* ]] || { echo "unknown target $t" >&2; exit 2; }
done
has() { [[ ",$PARTS," == *",$1,"* ]]; }
for p in ${PARTS//,/ }; do
  [[ " seq par16 wrk perf strace defer shutdown " == *" $p "* ]] || { echo "unknown part $p" >&2; exit 2; }
done
[[ $EUID -eq 0 ]] || { echo "run_all.sh needs root (namespaces, nft, tcpdump, perf, strace)" >&2; exit 1; }
missing=""
for c in ip nft tcpdump curl openssl nginx nsd haproxy python3 ss setsid timeout; do command -v "$c" >/dev/null || missing+=" $c"; done
has wrk && { command -v wrk >/dev/null || missing+=" wrk"; }
{ has wrk || has perf; } && { command -v perf >/dev/null || missing+=" perf"; }
{ has strace || has shutdown; } && { command -v strace >/dev/null || missing+=" strace"; }
[[ -z $missing ]] || { echo "missing commands:$missing (see bench/wire/README.md)" >&2; exit 1; }

if [[ -z $DIR ]]; then DIR=$(mktemp -d /tmp/airlock-wire.XXXXXX); else mkdir -p "$DIR"; fi
WIRE_DIR=$(cd "$DIR" && pwd) || exit 1
WIRE_OUT=$WIRE_DIR/out
export WIRE_DIR WIRE_OUT
mkdir -p "$WIRE_OUT"
echo "bench/wire: run folder $WIRE_DIR (outputs in $WIRE_OUT)"
source "$HERE/env.sh"
{
  echo "date: $(date -u '+%F %T UTC')"
  echo "command: $0 $(printf '%q ' -d "$DIR" -n "$N" -t "$TARGETS" -p "$PARTS" -r "$ROUNDS" --wrk-rounds "$WRK_ROUNDS" --wrk-seconds "$WRK_SECS")"
  echo "airlock: $AIRLOCK$( [[ -f $AIRLOCK_BUILD/../../COMMIT ]] && echo " (commit $(cat "$AIRLOCK_BUILD/../../COMMIT"))")"
  echo "floor_relay: $FLOOR"
  echo "repository: $(git -C "$REPO" describe --always --dirty 2>/dev/null)"
  echo "kernel: $(uname -r), cpus: $(nproc), load: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "haproxy: $(haproxy -v 2>/dev/null | head -1)"
  echo "nginx: $(nginx -v 2>&1)"
  echo "curl: $(curl --version | head -1)"
} >"$WIRE_DIR/run.txt"
cat "$WIRE_DIR/run.txt"

trap '"$HERE/teardown.sh"' EXIT
trap 'exit 130' INT TERM
"$HERE/setup.sh" || exit 1

an() {  # DIR [--complete]
  local d=$1; shift
  [[ -f $d/gc.pcap ]] && python3 "$HERE/analyze.py" "$d" "$@" --json "$d/summary.json" >"$d/summary.txt"
}
seq_tags=("") wrk_tags=() perf_tags=()
for ((r = 2; r <= ROUNDS; r++)); do seq_tags+=("-seq-r$r"); done
for ((r = 1; r <= ROUNDS; r++)); do
  for t in $TARGETS; do
    tag=${seq_tags[r - 1]}
    if has seq; then "$HERE/capture.sh" "$t" "$N" 1 "$tag"; an "$WIRE_OUT/$t$tag"; fi
    if has par16 && ((r == 1)); then "$HERE/capture.sh" "$t" "$N" 16 -par16; an "$WIRE_OUT/$t-par16"; fi
    if has perf; then
      "$HERE/perfcount.sh" "$t" "$N" 1 "-seq-r$r"
      "$HERE/perfcount.sh" "$t" "$N" 16 "-par16-r$r"
    fi
  done
  perf_tags+=("-seq-r$r" "-par16-r$r")
done
if has wrk; then
  for ((r = 1; r <= WRK_ROUNDS; r++)); do
    for t in $TARGETS; do "$HERE/wrkload.sh" "$t" "$WRK_SECS" "-r$r"; an "$WIRE_OUT/$t-wrk-r$r" --complete; done
    wrk_tags+=("-wrk-r$r")
  done
fi
proxies=$(echo " $TARGETS " | sed 's/ direct / /')
if has strace; then for t in $proxies; do "$HERE/strace.sh" "$t" $(((N + 1) / 2)); done; fi
if has shutdown; then for t in $proxies; do [[ $t == airlock* ]] && "$HERE/shutdown_probe.sh" "$t" "$N"; done; fi
has defer && "$HERE/defer_ack.sh" 20

# ---- tables ----
cd "$WIRE_OUT" || exit 1
has seq && python3 "$HERE/tables.py" "" $TARGETS >tables-seq.md
has par16 && python3 "$HERE/tables.py" -par16 $TARGETS >tables-par16.md
for g in "${wrk_tags[@]}"; do python3 "$HERE/tables.py" "$g" $TARGETS >"tables$g.md"; done
tags=()
has seq && tags+=("${seq_tags[@]}")
has par16 && tags+=(-par16)
tags+=("${wrk_tags[@]}")
if ((${#tags[@]})); then
  python3 "$HERE/keyfigs.py" "${tags[@]}" >keyfigs.md
  python3 "$HERE/gaps.py" "${tags[@]}" >gaps.md
fi
((${#wrk_tags[@]})) && python3 "$HERE/keyfigs.py" --mean "${wrk_tags[@]}" >keyfigs-wrk-mean.md
if has perf; then
  for g in "${perf_tags[@]}"; do echo "### $g"; echo; python3 "$HERE/perftable.py" "$N" "$g" $TARGETS; done >perf-curl.md
fi
for g in "${wrk_tags[@]}"; do echo "### $g"; echo; python3 "$HERE/perftable.py" 0 "$g" $TARGETS; done >perf-wrk.md
[[ -s perf-wrk.md ]] || rm -f perf-wrk.md
has strace && python3 "$HERE/syscalls.py" $(((N + 1) / 2)) $proxies >syscalls.md
echo "bench/wire: done; tables in $WIRE_OUT:"
ls "$WIRE_OUT"/*.md 2>/dev/null | sed 's/^/  /'
