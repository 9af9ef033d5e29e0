# shellcheck shell=bash
# Constants for bench/wire. Sourced by every script here.
# WIRE_DIR: the run's folder (run_all.sh makes it: --dir, else mktemp -d); work/ in it holds
# the rendered configs, PKI, logs and PIDs of one setup, out/ the captures and tables.
# AIRLOCK_BUILD: the build folder whose app/airlock and bench/floor_relay are measured
# (default build/release at the repository's top, as bench/run).
WIRE_HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$WIRE_HERE/../.." && pwd)
BENCH_LIB=$REPO/bench/lib
BENCH_CONF=$REPO/bench/conf
[[ -n ${WIRE_DIR:-} ]] || { echo "WIRE_DIR is not set (run_all.sh sets it; or export WIRE_DIR=the run's folder)" >&2; exit 2; }
W=$WIRE_DIR/work                # rendered configs, pki, logs, pids (per setup)
OUT=$WIRE_DIR/out               # captures, summaries, tables
PFX_FILE=$W/prefix
if [[ -f $PFX_FILE ]]; then PFX=$(cat "$PFX_FILE"); else PFX=${PFX:-ws-$(printf '%04x' $((RANDOM % 65536)))}; fi
NS_C=$PFX-c NS_G=$PFX-g NS_S=$PFX-s
IF_C=${PFX//-/}c0 IF_GC=${PFX//-/}g0 IF_GS=${PFX//-/}g1 IF_S=${PFX//-/}s0
IP_C=198.18.101.2 IP_GC=198.18.101.1 IP_GS=198.18.102.1 IP_S=198.18.102.2
NET_C=198.18.101.0/24 NET_S=198.18.102.0/24 BENCH_NET=198.18.0.0/15
ZONE_OK=ok.albench ZONE_BAD=bad.albench HOST_OK=www.ok.albench
PORT_AIRLOCK=15001 PORT_AIRLOCK_TLS=15002 PORT_AIRLOCK_TP=15003 PORT_FLOOR=15004
PORT_HAPROXY_TLS=15443 PORT_NGINX_TLS=16443 PORT_DNS_AIRLOCK=15053
AIRLOCK_BUILD=${AIRLOCK_BUILD:-$REPO/build/release}
AIRLOCK=${AIRLOCK:-$AIRLOCK_BUILD/app/airlock}
# floor_relay is a target of the bench build only (-DAIRLOCK_BENCH=ON); setup.sh compiles
# bench/floor_relay.cpp into work/ when the build folder has none.
FLOOR=${FLOOR:-$AIRLOCK_BUILD/bench/floor_relay}
[[ -x $FLOOR ]] || FLOOR=$W/floor_relay
inns() { local ns=$1; shift; ip netns exec "$ns" "$@"; }
log() { printf '[%(%H:%M:%S)T] %s\n' -1 "$*" >&2; }
# start_bg NAME NS CMD... (pid in $W/pids/NAME)
start_bg() {
  local name=$1 ns=$2; shift 2
  setsid ip netns exec "$ns" "$@" >>"$W/logs/$name.out" 2>&1 </dev/null &
  echo $! >"$W/pids/$name"
}
pid_of() { cat "$W/pids/$1" 2>/dev/null; }
stop_bg() {
  local p; p=$(pid_of "$1"); [[ -n $p ]] || return 0
  if kill -0 "$p" 2>/dev/null; then
    kill -TERM "$p"; for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$p" 2>/dev/null && kill -KILL "$p"
  fi
  rm -f "$W/pids/$1"
}
wait_listen() {
  local ns=$1 proto=$2 port=$3 t=${4:-10} flag=-ltnH
  [[ $proto == udp ]] && flag=-lunH
  for _ in $(seq $((t * 10))); do
    inns "$ns" ss $flag "sport = :$port" 2>/dev/null | grep -q . && return 0; sleep 0.1
  done; return 1
}
# the proxy's PIDs for TARGET (nginx: master and workers); empty for direct
# shellcheck disable=SC2046  # one PID a word
kids() { local r=$1; echo "$r" $(cat /proc/"$r"/task/*/children 2>/dev/null); }
proxy_pids() {
  case $1 in
    airlock|airlock-tproxy) pid_of airlock ;;
    haproxy) pid_of haproxy ;;
    nginx) kids "$(pid_of nginx-gw)" ;;
    floor) pid_of floor ;;
    *) echo "" ;;
  esac
}
