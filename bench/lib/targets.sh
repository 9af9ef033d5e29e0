# shellcheck shell=bash
# The targets: ways for the client's TCP to reach the origin, and the resolvers.
#   TGT_MODE[t]   direct | redirect | tproxy   (what the gateway's nft table does)
#   TGT_PORTS[t]  "TLS HTTP RAW": gateway ports receiving the client's :443, :80 and
#                 :$PORT_RAW (opaque TCP, the bulk-tcp scenario); "-" where it has none
#   TGT_PROCS[t]  start_bg names whose process trees are the proxy (CPU, memory)
#   TGT_NOTE[t]   one line for the report
declare -A TGT_MODE TGT_PORTS TGT_PROCS TGT_NOTE TGT_START

TGT_MODE[direct]=direct TGT_PORTS[direct]="- - -" TGT_PROCS[direct]=""
TGT_NOTE[direct]="no proxy: the gateway's kernel forwards"

TGT_MODE[airlock]=redirect TGT_PORTS[airlock]="$PORT_AIRLOCK_TLS $PORT_AIRLOCK $PORT_AIRLOCK" TGT_PROCS[airlock]=airlock
TGT_START[airlock]=start_airlock
TGT_NOTE[airlock]="airlock $AIRLOCK_SOURCE, one process, one event loop per CPU (threads: auto; the proxy listeners share their port by SO_REUSEPORT; DNS on the first loop); nft REDIRECT (:443 to a port of its own, the rest to another: airlock nft-rules --https-port) + SO_ORIGINAL_DST; connects to its own resolution of the SNI/Host; opaque TCP (no name) by a cidr rule for the origin's /24 on :$PORT_RAW, to the original destination; decision log to a file"

# The same airlock process, reached through its listen.tproxy port by nft TPROXY (as nginx
# is): no NAT, and each connection keeps its own four-tuple (README.md "Threads").
TGT_MODE[airlock-tproxy]=tproxy TGT_PORTS[airlock-tproxy]="$PORT_AIRLOCK_TP $PORT_AIRLOCK_TP $PORT_AIRLOCK_TP" TGT_PROCS[airlock-tproxy]=airlock
TGT_START[airlock-tproxy]=start_airlock
TGT_NOTE[airlock-tproxy]="the airlock process above, through its listen.tproxy port: nft TPROXY (airlock nft-rules --tproxy), the destination read with getsockname()"

# The floor: a relay with no policy at all (bench/floor_relay.cpp), reached as airlock-tproxy
# is. What the kernel's work for two TCP connections leaves any proxy on this machine.
TGT_MODE[floor]=tproxy TGT_PORTS[floor]="$PORT_FLOOR $PORT_FLOOR $PORT_FLOOR" TGT_PROCS[floor]=floor
TGT_START[floor]=start_floor
TGT_NOTE[floor]="bench/floor_relay, $GW_THREADS threads (SO_REUSEPORT, edge-triggered epoll), nft TPROXY: reads the first bytes, connects to the original destination, relays; no parsing, policy, resolution or log (copy, then splice once a read fills 16 KiB); allows everything, so its filter checks fail by design"

TGT_MODE[haproxy]=redirect TGT_PORTS[haproxy]="$PORT_HAPROXY_TLS $PORT_HAPROXY_HTTP $PORT_HAPROXY_TCP" TGT_PROCS[haproxy]=haproxy
TGT_START[haproxy]=start_haproxy
TGT_NOTE[haproxy]="HAProxy $(haproxy -v 2>/dev/null | awk 'NR==1{print $3}'), nbthread $GW_THREADS, nft REDIRECT, server 0.0.0.0:0 (original destination); TLS: tcp mode, inspect-delay + req.ssl_sni ACL; HTTP: http mode, Host ACL; opaque TCP: tcp mode, dst ACL (the origin's /24)"

TGT_MODE[nginx]=tproxy TGT_PORTS[nginx]="$PORT_NGINX_TLS $PORT_NGINX_HTTP $PORT_NGINX_TCP" TGT_PROCS[nginx]=nginx-gw
TGT_START[nginx]=start_nginx_gw
TGT_NOTE[nginx]="nginx $(nginx -v 2>&1 | sed 's|.*/||'), $GW_THREADS workers, nft TPROXY (IP_TRANSPARENT listeners handed over through the NGINX variable), proxy_pass \$server_addr:\$server_port; TLS: stream ssl_preread + map hostnames, proxy_half_close $NGINX_HALF_CLOSE; HTTP: map \$host; opaque TCP: stream, geo \$server_addr (the origin's /24)"

TGT_MODE[squid]=redirect TGT_PORTS[squid]="$PORT_SQUID_TLS $PORT_SQUID_HTTP -" TGT_PROCS[squid]=squid
TGT_START[squid]=start_squid
TGT_NOTE[squid]="Squid $(squid -v 2>/dev/null | awk 'NR==1{print $4}') (squid-openssl), 1 worker, nft REDIRECT; TLS: https_port intercept ssl-bump, peek at step 1, splice on ssl::server_name; HTTP: intercept, dstdomain; opaque TCP: not set up (no bulk-tcp row)"

# route_target T : the gateway's nft table for T, then a conntrack flush
route_target() {
  local tls http raw
  read -r tls http raw <<<"${TGT_PORTS[$1]}"
  case ${TGT_MODE[$1]} in
    direct) nft_direct ;;
    redirect) nft_redirect "$tls" "$http" "${raw:--}" ;;
    tproxy) nft_tproxy "$tls" "$http" "${raw:--}" ;;
  esac
  ct_flush
}

target_pids() {
  local n out=""
  for n in ${TGT_PROCS[$1]}; do out+=" $(pid_of "$n")"; done
  echo "$out"
}

# ---- servers --------------------------------------------------------------------------
start_origin() {
  start_bg origin "$NS_S" nginx -p "$WORK" -c "$WORK/cfg/origin-nginx.conf" -g 'daemon off;'
  wait_listen "$NS_S" tcp 443 10
}
start_servers() {
  start_origin || die "origin nginx did not start: $(tail -5 "$WORK/logs/origin.out" "$WORK/logs/origin-nginx.err" 2>/dev/null)"
  start_bg nsd "$NS_S" nsd -d -c "$WORK/cfg/nsd.conf"
  wait_listen "$NS_S" udp 53 10 || die "nsd did not start: $(tail -5 "$WORK/logs/nsd.out" "$WORK/logs/nsd.log" 2>/dev/null)"
}

# start_rawsrc : the raw TCP byte source of bulk-tcp (lib/tcp_bulk.py serve), in the origin's
# namespace beside nginx, serving the same large file by sendfile(2); started on first use
start_rawsrc() {
  is_running rawsrc && return 0
  start_bg rawsrc "$NS_S" "${TCP_PY:-python3}" "$HERE/lib/tcp_bulk.py" serve "$IP_S" "$PORT_RAW" "$WORK/www/big.bin"
  wait_listen "$NS_S" tcp "$PORT_RAW" 10
}

# ---- proxies ----------------------------------------------------------------------------
start_airlock() {
  start_bg airlock "$NS_G" "$AIRLOCK" daemon -c "$WORK/cfg/airlock.yaml"
  for _ in $(seq 100); do
    grep -q 'airlock: ready' "$WORK/logs/airlock.out" 2>/dev/null && return 0
    is_running airlock || break
    sleep 0.1
  done
  return 1
}
start_floor() {
  start_bg floor "$NS_G" "$FLOOR" "$PORT_FLOOR" "$GW_THREADS"
  wait_listen "$NS_G" tcp "$PORT_FLOOR" 10
}
start_haproxy() {
  start_bg haproxy "$NS_G" haproxy -db -f "$WORK/cfg/haproxy.cfg"
  wait_listen "$NS_G" tcp "$PORT_HAPROXY_TLS" 10
}
start_nginx_gw() {
  start_bg nginx-gw "$NS_G" python3 "$HERE/lib/tproxy_exec.py" "$PORT_NGINX_TLS,$PORT_NGINX_HTTP,$PORT_NGINX_TCP" -- \
    nginx -p "$WORK" -c "$WORK/cfg/nginx-gw.conf" -g 'daemon off;'
  wait_listen "$NS_G" tcp "$PORT_NGINX_TLS" 10 && sleep 0.3 && is_running nginx-gw
}
start_squid() {
  start_bg squid "$NS_G" squid -N -f "$WORK/cfg/squid.conf"
  wait_listen "$NS_G" tcp "$PORT_SQUID_TLS" 20
}

FAILED_TARGETS=""
target_ok() { [[ " $FAILED_TARGETS " != *" $1 "* ]]; }

# start_targets T... : start each proxy once; one that fails is reported and skipped
start_targets() {
  local t n
  for t in "$@"; do
    [[ $t == direct ]] && continue
    is_running "${TGT_PROCS[$t]}" && continue
    if ! ${TGT_START[$t]}; then
      warn "target $t did not start; skipped. Its output:"
      for n in ${TGT_PROCS[$t]}; do tail -5 "$WORK/logs/$n.out" >&2; done
      FAILED_TARGETS+=" $t"
    fi
  done
}
# restart_target T : fresh processes (before a memory measurement)
restart_target() {
  local n
  [[ $1 == direct ]] && return 0
  for n in ${TGT_PROCS[$1]}; do stop_bg "$n"; done
  sleep 0.3
  ${TGT_START[$1]}
}

# ---- resolvers ----------------------------------------------------------------------------
declare -A DNS_PORT DNS_NOTE DNS_CMD DNS_PROC
DNS_PORT[auth]=53 DNS_PROC[auth]=nsd
DNS_NOTE[auth]="NSD $(nsd -v 2>&1 | awk 'NR==1{print $3}'), the authoritative server itself (no cache, no filter): the ceiling"
DNS_PORT[unbound]=$PORT_DNS_UNBOUND DNS_PROC[unbound]=dns-unbound
DNS_CMD[unbound]="unbound -d -c $WORK/cfg/unbound-filter.conf"
DNS_NOTE[unbound]="unbound $(unbound -V 2>/dev/null | awk 'NR==1{print $2}'), $GW_THREADS threads, local-zone . refuse + allowed zones transparent, forward to NSD"
DNS_PORT[dnsmasq]=$PORT_DNS_DNSMASQ DNS_PROC[dnsmasq]=dns-dnsmasq
DNS_CMD[dnsmasq]="dnsmasq -k -C $WORK/cfg/dnsmasq.conf"
DNS_NOTE[dnsmasq]="dnsmasq $(dnsmasq -v | awk 'NR==1{print $3}'), one process, server=/allowed/NSD per entry + address=/#/ (NXDOMAIN), cache-size=10000"
DNS_PORT[dnsdist]=$PORT_DNS_DNSDIST DNS_PROC[dnsdist]=dns-dnsdist
DNS_CMD[dnsdist]="dnsdist --supervised --disable-syslog -C $WORK/cfg/dnsdist.conf"
DNS_NOTE[dnsdist]="dnsdist $(dnsdist --version 2>/dev/null | awk 'NR==1{print $2}'), $GW_THREADS listeners, SuffixMatchNode allow + RCodeAction(REFUSED), packet cache, NSD behind"
DNS_PORT[airlock]=$PORT_DNS_AIRLOCK DNS_PROC[airlock]=airlock
DNS_NOTE[airlock]="airlock, DNS on one event loop; the same process as the proxy target; NXDOMAIN for denied names; per-session rate limit raised out of the way"

dns_addr() { if [[ $1 == auth ]]; then echo "$IP_S"; else echo "$IP_GC"; fi; }

start_resolvers() {
  local r
  for r in "$@"; do
    case $r in
      auth) ;;
      airlock) start_targets airlock ;;
      *) start_bg "${DNS_PROC[$r]}" "$NS_G" ${DNS_CMD[$r]} ;;
    esac
  done
  for r in "$@"; do
    [[ $r == auth ]] && continue
    wait_listen "$NS_G" udp "${DNS_PORT[$r]}" 10 || { warn "resolver $r not listening; skipped"; FAILED_TARGETS+=" dns-$r"; }
  done
}
