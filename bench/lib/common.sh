# shellcheck shell=bash
# Constants, process control and CPU accounting for bench/run. Sourced by bench/run,
# which sets HERE (bench/), WORK (this run's scratch folder) and RESULTS.

# ---- topology: 198.18.0.0/15 (RFC 2544 benchmarking) only, inside our own namespaces ----
# A random prefix per run: namespaces, veths and nft tables of an earlier or parallel run
# are never touched, and cleanup removes exactly what this run made.
PFX=${PFX:-ab-$(printf '%04x' $((RANDOM % 65536)))}
NS_C=$PFX-c          # client: wrk, curl, dnsperf, bench_loadgen
NS_G=$PFX-g          # gateway: the proxies and resolvers under test, nft interception
NS_S=$PFX-s          # server: origin nginx (HTTPS and HTTP), NSD (authoritative DNS)
IF_C=${PFX//-/}c0 IF_GC=${PFX//-/}g0 IF_GS=${PFX//-/}g1 IF_S=${PFX//-/}s0
IP_C=198.18.1.2      # client, link client<->gw 198.18.1.0/24
IP_GC=198.18.1.1     # gw, client side
IP_GS=198.18.2.1     # gw, server side
IP_S=198.18.2.2      # origin + authoritative DNS
NET_C=198.18.1.0/24
NET_S=198.18.2.0/24
BENCH_NET=198.18.0.0/15

# Names: the allowed zone is on every allowlist, the other on none; both resolve to IP_S.
ZONE_OK=ok.albench
ZONE_BAD=bad.albench
HOST_OK=www.$ZONE_OK
HOST_BAD=www.$ZONE_BAD

# Ports in the gateway where intercepted client TCP lands (:443, :80), and resolvers.
PORT_AIRLOCK=15001          # :80 and the rest (airlock tells TLS from HTTP itself)
PORT_AIRLOCK_TLS=15002      # :443 on its own port (airlock nft-rules --https-port; README "Threads")
PORT_AIRLOCK_TP=15003       # airlock-tproxy: the same process's listen.tproxy, for all of them
PORT_FLOOR=15004            # floor: bench/floor_relay (no policy), for all of them
PORT_HAPROXY_TLS=15443 PORT_HAPROXY_HTTP=15080
PORT_NGINX_TLS=16443 PORT_NGINX_HTTP=16080
PORT_SQUID_TLS=17443 PORT_SQUID_HTTP=17080
PORT_DNS_AIRLOCK=15053 PORT_DNS_UNBOUND=5320 PORT_DNS_DNSMASQ=5310 PORT_DNS_DNSDIST=5330
# Opaque TCP (the bulk-tcp scenario): the origin's raw byte source (lib/tcp_bulk.py, neither
# TLS nor HTTP) and the gateway ports its intercepted connections land on (airlock: its one
# port again; squid relays no opaque TCP here).
PORT_RAW=5201
PORT_HAPROXY_TCP=15900 PORT_NGINX_TCP=16900

log()  { printf '[%(%H:%M:%S)T] %s\n' -1 "$*" >&2; }
warn() { printf '[%(%H:%M:%S)T] WARN: %s\n' -1 "$*" >&2; }
die()  { printf 'bench/run: %s\n' "$*" >&2; exit 1; }

inns() { local ns=$1; shift; ip netns exec "$ns" "$@"; }

# start_bg NAME NS CMD... : a long-running process in a namespace, in the foreground mode
# of its program, its PID kept in $WORK/pids/NAME (setsid and ip netns exec both exec, so
# $! is the program itself). In a session of its own: a Ctrl-C in the terminal reaches
# this script, whose trap stops every recorded PID, and not the servers half-way through
# a measurement. Output goes to $WORK/logs/NAME.out.
start_bg() {
  local name=$1 ns=$2; shift 2
  setsid ip netns exec "$ns" "$@" >>"$WORK/logs/$name.out" 2>&1 </dev/null &
  echo $! >"$WORK/pids/$name"
}

# bounded SECONDS CMD... : CMD under timeout, in the background, waited for. Bash runs a
# trap only after a foreground child ends, and not at all when that child handled the
# Ctrl-C itself (wrk does); a `wait` is interrupted at once. The trap stops $FG_PID.
bounded() {
  local limit=$1 rc
  shift
  timeout "$limit" "$@" &
  FG_PID=$!
  wait "$FG_PID"
  rc=$?
  FG_PID=
  return $rc
}
FG_PID=

pid_of() { cat "$WORK/pids/$1" 2>/dev/null; }
is_running() { local p; p=$(pid_of "$1"); [[ -n $p ]] && kill -0 "$p" 2>/dev/null; }

# stop_bg NAME : TERM the recorded PID, wait up to 5 s, then KILL it. Only our own PIDs.
stop_bg() {
  local name=$1 p
  p=$(pid_of "$name")
  [[ -n $p ]] || return 0
  if kill -0 "$p" 2>/dev/null; then
    kill -TERM "$p" 2>/dev/null
    for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$p" 2>/dev/null && kill -KILL "$p" 2>/dev/null
  fi
  wait "$p" 2>/dev/null
  rm -f "$WORK/pids/$name"
}

stop_all_bg() {
  local f
  for f in "$WORK"/pids/*; do
    [[ -e $f ]] && stop_bg "$(basename "$f")"
  done
}

# wait_listen NS tcp|udp PORT SECONDS : bounded wait until something listens on PORT.
wait_listen() {
  local ns=$1 proto=$2 port=$3 t=${4:-10} flag=-ltnH
  [[ $proto == udp ]] && flag=-lunH
  for _ in $(seq $((t * 10))); do
    inns "$ns" ss $flag "sport = :$port" 2>/dev/null | grep -q . && return 0
    sleep 0.1
  done
  return 1
}

# ---- CPU and memory of process trees, via /proc ---------------------------------------
# In bash and awk, not Python: these run several times per measurement, and an interpreter's
# start-up on a loaded machine is both overhead and "foreign" CPU.
# tree_pids PID... : the PIDs and all their descendants
tree_pids() {
  local todo=("$@") p out=()
  while ((${#todo[@]})); do
    p=${todo[0]} todo=("${todo[@]:1}")
    [[ -n $p && -d /proc/$p ]] || continue
    out+=("$p")
    # shellcheck disable=SC2207
    todo+=($(cat /proc/"$p"/task/*/children 2>/dev/null))
  done
  echo "${out[*]}"
}
# cpu_s PID... : seconds on a CPU of every thread of the trees, from schedstat (in ns: the
# 10 ms ticks of /proc/PID/stat are too coarse for a one-second transfer)
cpu_s() {
  local p
  for p in $(tree_pids "$@"); do cat /proc/"$p"/task/*/schedstat 2>/dev/null; done |
    awk '{ s += $1 } END { printf "%.4f\n", s / 1e9 }'
}
# rss_kb PID... : summed resident set of the trees, KiB
rss_kb() {
  local p
  for p in $(tree_pids "$@"); do cat "/proc/$p/status" 2>/dev/null; done | awk '/^VmRSS:/ { s += $2 } END { print s + 0 }'
}
# sys_cpu : "busy_s total_s irq+softirq_s" over all CPUs, from /proc/stat
sys_cpu() { awk '/^cpu /{b=$2+$3+$4+$7+$8+$9; t=b+$5+$6; printf "%.2f %.2f %.2f\n", b/100, t/100, ($7+$8)/100}' /proc/stat; }

fdiv() { awk -v a="$1" -v b="$2" -v m="${3:-1}" 'BEGIN{ if (b == 0) print "nan"; else printf "%.4g\n", a * m / b }'; }
fsub() { awk -v a="$1" -v b="$2" 'BEGIN{ printf "%.3f\n", a - b }'; }

# emit SCENARIO TARGET METRIC ROUND VALUE UNIT : one row of raw.tsv
emit() {
  printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" "$5" "${6:-}" >>"$RESULTS/raw.tsv"
}

# acct_start "PROXY_PIDS" "SERVER_PIDS" ... acct_end SCENARIO TARGET ROUND UNITS CLIENT_CPU_S UNIT
# Around one measurement: CPU per unit of the proxy, the server and the client, and the
# "foreign" CPU share: busy time that is none of ours nor interrupts, i.e. the other
# builds on this machine. A round with much foreign CPU was disturbed (report.py drops it).
acct_start() {
  ACC_PP=$1 ACC_SP=$2
  ACC_P0=$(cpu_s $ACC_PP) ACC_S0=$(cpu_s $ACC_SP)
  read -r ACC_B0 ACC_T0 ACC_I0 < <(sys_cpu)
}
acct_end() {
  local sc=$1 t=$2 r=$3 units=$4 ccpu=${5:-0} unit=${6:-req} p1 s1 b1 t1 i1 dp ds dt db di
  p1=$(cpu_s $ACC_PP) s1=$(cpu_s $ACC_SP)
  read -r b1 t1 i1 < <(sys_cpu)
  dp=$(fsub "$p1" "$ACC_P0") ds=$(fsub "$s1" "$ACC_S0") dt=$(fsub "$t1" "$ACC_T0")
  db=$(fsub "$b1" "$ACC_B0") di=$(fsub "$i1" "$ACC_I0")
  [[ -n $ACC_PP ]] && emit "$sc" "$t" "proxy_cpu_us_per_$unit" "$r" "$(fdiv "$dp" "$units" 1e6)" us
  emit "$sc" "$t" "server_cpu_us_per_$unit" "$r" "$(fdiv "$ds" "$units" 1e6)" us
  emit "$sc" "$t" "client_cpu_us_per_$unit" "$r" "$(fdiv "$ccpu" "$units" 1e6)" us
  emit "$sc" "$t" foreign_pct "$r" "$(awk -v b="$db" -v i="$di" -v o="$dp" -v s="$ds" -v c="$ccpu" -v t="$dt" \
    'BEGIN{ if (t <= 0) { print 0; exit } f = (b - i - o - s - c) / t * 100; if (f < 0) f = 0; printf "%.1f", f }')" "%"
}
