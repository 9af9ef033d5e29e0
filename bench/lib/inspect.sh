# shellcheck shell=bash
# The inspect scenario (issue 8): HTTPS requests per second through a TLS-inspecting
# proxy, new connections (one request each, `Connection: close`) and kept-alive ones
# (wrk's default: every connection sends request after request), against
#   airlock-inspect  airlock, the host on a rule with `inspect: true` (airlock terminates
#                    TLS with a leaf from its CA, connects to and verifies the origin,
#                    judges and relays each request)
#   airlock-splice   the same airlock process, a host on a rule without inspect (SNI
#                    sniffed, then spliced: what the https scenario measures)
#   squid-bump       squid 5 ssl_bump, bump mode (conf/squid-bump.conf)
#   direct           no proxy (context: what the two ends cost alone)
# all in the same rounds. airlock-inspect and airlock-splice differ only in the name the
# client asks for (insp.ok.albench, an exact rule with inspect; www.ok.albench, the
# "*.ok.albench" rule of the allowlist), so the ratio between them is the cost of
# inspection alone. Sourced by bench/run after targets.sh; bench/README.md says more.

INSP_HOST=insp.$ZONE_OK
PORT_AIRLOCK_INSP=15101 PORT_DNS_AIRLOCK_INSP=15153
PORT_SQUID_BUMP=17543 PORT_SQUID_BUMP_FWD=3129
INSP_DIR=$WORK/inspect
INSP_TARGETS=${INSP_TARGETS:-"direct airlock-inspect airlock-splice squid-bump"}
INSP_C=${INSP_C:-32}

declare -A INSP_URLHOST INSP_CA
TGT_MODE[airlock-inspect]=redirect TGT_PORTS[airlock-inspect]="$PORT_AIRLOCK_INSP $PORT_AIRLOCK_INSP"
TGT_PROCS[airlock-inspect]=airlock-insp TGT_START[airlock-inspect]=start_airlock_insp
TGT_MODE[airlock-splice]=redirect TGT_PORTS[airlock-splice]="$PORT_AIRLOCK_INSP $PORT_AIRLOCK_INSP"
TGT_PROCS[airlock-splice]=airlock-insp TGT_START[airlock-splice]=start_airlock_insp
TGT_MODE[squid-bump]=redirect TGT_PORTS[squid-bump]="$PORT_SQUID_BUMP $PORT_SQUID_BUMP"
TGT_PROCS[squid-bump]=squid-bump TGT_START[squid-bump]=start_squid_bump
# the name each target is asked for, and the one CA the client's check trusts for it
INSP_URLHOST[direct]=$HOST_OK INSP_URLHOST[airlock-splice]=$HOST_OK
INSP_URLHOST[airlock-inspect]=$INSP_HOST INSP_URLHOST[squid-bump]=$INSP_HOST
INSP_CA[direct]=$WORK/pki/ca.pem INSP_CA[airlock-splice]=$WORK/pki/ca.pem
INSP_CA[airlock-inspect]=$INSP_DIR/airlock-ca/ca.crt INSP_CA[squid-bump]=$INSP_DIR/squid-ca/ca.pem

# inspect_material : both proxies' CAs, squid's certificate database, the two configs, the
# client's name for the inspected host, and a SYN counter in front of the origin; once per
# run (inspect and inspect-h2 share it).
inspect_material() {
  [[ ${INSP_READY:-0} == 1 ]] && return 0
  mkdir -p "$INSP_DIR"
  "$AIRLOCK" ca init "$INSP_DIR/airlock-ca" >"$WORK/logs/airlock-ca-init.out" 2>&1 || { warn "airlock ca init failed"; return 1; }
  [[ -f ${INSP_CA[airlock-inspect]} ]] || { warn "airlock ca init made no $(basename "${INSP_CA[airlock-inspect]}")"; return 1; }
  # squid's CA: EC P-256 like airlock's; squid signs its mimicked leaves with this key
  mkdir -p "$INSP_DIR/squid-ca"
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
    -keyout "$INSP_DIR/squid-ca/ca.key" -out "$INSP_DIR/squid-ca/ca.pem" -subj "/CN=airlock bench squid bump CA" \
    -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign,digitalSignature \
    2>/dev/null || { warn "squid CA failed"; return 1; }
  /usr/lib/squid/security_file_certgen -c -s "$INSP_DIR/squid-ca/ssl_db" -M 4MB >/dev/null 2>&1 ||
    { warn "security_file_certgen -c failed"; return 1; }
  chown -R proxy:proxy "$INSP_DIR/squid-ca/ssl_db"
  # squid reads its CA after dropping privileges; airlock refuses a CA key others can read
  chmod 755 "$INSP_DIR" && chmod -R a+rX "$INSP_DIR/squid-ca"
  SQUID_CA_DIR=$INSP_DIR/squid-ca PORT_SQUID_BUMP=$PORT_SQUID_BUMP PORT_SQUID_BUMP_FWD=$PORT_SQUID_BUMP_FWD \
    python3 "$HERE/lib/render.py" "$HERE/conf/squid-bump.conf" "$WORK/cfg/squid-bump.conf" || return 1
  # airlock: the config of the other scenarios (the same 2,000-rule allowlist), on ports of
  # its own (no TPROXY port: the main airlock holds that one while it runs), with the
  # inspection CA and one exact rule that inspects ahead of the list (exact names are
  # matched before wildcards).
  sed -e "s|^  proxy: .*\$|  proxy: 0.0.0.0:$PORT_AIRLOCK_INSP|" \
      -e "/^  tproxy: /d" \
      -e "s|^\(  dns: .*:\)$PORT_DNS_AIRLOCK\$|\1$PORT_DNS_AIRLOCK_INSP|" \
      -e "s|airlock-decisions.jsonl|airlock-insp-decisions.jsonl|" \
      -e "/^    allow:\$/a\\      - host: $INSP_HOST\\n        inspect: true" \
      "$WORK/cfg/airlock.yaml" >"$WORK/cfg/airlock-insp.yaml"
  printf 'inspection:\n  ca_dir: %s\n  upstream_ca: [%s]\n' "$INSP_DIR/airlock-ca" "$WORK/pki/ca.pem" >>"$WORK/cfg/airlock-insp.yaml"
  grep -q "proxy: .*:$PORT_AIRLOCK_INSP\$" "$WORK/cfg/airlock-insp.yaml" && grep -q "inspect: true" "$WORK/cfg/airlock-insp.yaml" &&
    ! grep -q "^  tproxy:" "$WORK/cfg/airlock-insp.yaml" ||
    { warn "airlock-insp.yaml not as expected"; return 1; }
  grep -q " $INSP_HOST" "/etc/netns/$NS_C/hosts" || echo "$IP_S $INSP_HOST" >>"/etc/netns/$NS_C/hosts"
  # How many connections reach the origin's :443 per request (SYNs, the server's side):
  # a proxy that pooled upstream connections would do less work than one that does not.
  inns "$NS_S" nft -f - <<EOF2 || return 1
table ip albinsp {
  counter syn443 { }
  chain in {
    type filter hook input priority 0; policy accept;
    tcp dport 443 tcp flags & (syn | ack) == syn counter name "syn443"
  }
}
EOF2
  INSP_READY=1
}
origin_syns() { inns "$NS_S" nft list counter ip albinsp syn443 2>/dev/null | awk '/packets/{print $2}'; }

start_airlock_insp() {
  is_running airlock-insp && return 0
  start_bg airlock-insp "$NS_G" "$AIRLOCK" daemon -c "$WORK/cfg/airlock-insp.yaml"
  for _ in $(seq 100); do
    grep -q 'airlock: ready' "$WORK/logs/airlock-insp.out" 2>/dev/null && return 0
    is_running airlock-insp || break
    sleep 0.1
  done
  return 1
}
start_squid_bump() {
  is_running squid-bump && return 0
  start_bg squid-bump "$NS_G" squid -N -n squidbump -f "$WORK/cfg/squid-bump.conf"
  wait_listen "$NS_G" tcp "$PORT_SQUID_BUMP" 20
}

# inspect_check T : through T, the name it is asked for answers 200 with only its CA
# trusted (for the inspecting ones: their own CA, never the origin's), and a name on no
# list is refused; one probe notes the protocol, the issuer and whether a session was
# resumed (it must not be: every new connection is a full handshake on every target).
inspect_check() {
  local t=$1 h=${INSP_URLHOST[$1]} ca=${INSP_CA[$1]} a b probe
  a=$(inns "$NS_C" curl -s -m 5 --cacert "$ca" -o /dev/null -w '%{http_code}' "https://$h/small.html")
  b=$(inns "$NS_C" curl -s -m 5 --cacert "$ca" --cacert "$WORK/pki/ca.pem" -o /dev/null -w '%{http_code}' \
    "https://$HOST_BAD/small.html")
  emit inspect-new "$t" allowed_ok 0 "$([[ $a == 200 ]] && echo 1 || echo 0)" bool
  emit inspect-new "$t" denied_blocked 0 "$([[ $b != 200 ]] && echo 1 || echo 0)" bool
  probe=$(bounded 30 ip netns exec "$NS_C" python3 "$HERE/lib/inspect_probe.py" "$h" "$ca" 2>&1)
  log "inspect check $t ($h): allowed $a, $HOST_BAD ${b}; $probe"
  echo "inspect check $t: $h $a, $HOST_BAD $b; $probe" >>"$RESULTS/meta.txt"
  emit inspect-new "$t" resumed 0 "$(sed -n 's/.*resumed=\([01]\).*/\1/p' <<<"$probe")" bool
  [[ $t == direct || $b != 200 ]] || warn "inspect/$t: a name on no allowlist was NOT blocked"
  [[ $a == 200 ]] || { warn "inspect/$t: $h failed (HTTP code $a); target skipped"; return 1; }
  [[ $probe == TLS* ]] || { warn "inspect/$t: the probe failed; target skipped"; return 1; }
  is_running "${TGT_PROCS[$t]:-origin}" || { warn "inspect/$t: ${TGT_PROCS[$t]} is gone: $(tail -3 "$WORK/logs/${TGT_PROCS[$t]}.out")"; return 1; }
}

# inspect_wrk URL SECONDS CONNECTIONS new|keep -> W_N W_RPS W_ERR W_CPU
inspect_wrk() {
  local out=$WORK/tmp/wrk.out tm=$WORK/tmp/wrk.time hdr=()
  [[ $4 == new ]] && hdr=(-H 'Connection: close')
  bounded $(($2 + 30)) ip netns exec "$NS_C" /usr/bin/time -f '%U %S' -o "$tm" \
    wrk -t"$WRK_T" -c"$3" -d"${2}s" --timeout 5s "${hdr[@]}" "$1" >"$out" 2>&1
  W_N=$(awk '/requests in/{print $1}' "$out")
  W_RPS=$(awk '/^Requests\/sec/{print $2}' "$out")
  W_ERR=$(awk '/Socket errors/{gsub(",", ""); e += $4 + $6 + $8 + $10} /Non-2xx/{e += $NF} END{print e + 0}' "$out")
  W_CPU=$(awk '{print $1 + $2}' "$tm" 2>/dev/null)
  [[ -n $W_N && -n $W_RPS ]] || { warn "wrk failed: $(tail -3 "$out")"; W_N=0 W_RPS=0 W_CPU=0; return 1; }
}

scenario_inspect() {
  local t r mode targets=() url s0 s1 m0 m1
  inspect_material || { warn "inspect: setup failed; scenario skipped"; return; }
  for t in $INSP_TARGETS; do
    [[ $t == direct ]] && continue
    ${TGT_START[$t]} || { warn "inspect: $t did not start: $(tail -3 "$WORK/logs/${TGT_PROCS[$t]}.out")"; FAILED_TARGETS+=" $t"; }
  done
  for t in $INSP_TARGETS; do
    target_ok "$t" || continue
    route_target "$t"
    inspect_check "$t" || continue
    url="https://${INSP_URLHOST[$t]}/small.html"
    inspect_wrk "$url" 1 "$INSP_C" new >/dev/null   # warm-up: leaves minted, caches filled
    inspect_wrk "$url" 1 "$INSP_C" keep >/dev/null
    targets+=("$t")
  done
  m0=$(rss_kb "$(pid_of airlock-insp)")
  for ((r = 1; r <= ROUNDS; r++)); do
    for mode in new keep; do
      for t in $(rotate "$r" "${targets[@]}"); do
        route_target "$t"
        url="https://${INSP_URLHOST[$t]}/small.html"
        s0=$(origin_syns)
        acct_start "$(target_pids "$t")" "$(pid_of origin)"
        inspect_wrk "$url" "$DUR" "$INSP_C" "$mode"
        acct_end "inspect-$mode" "$t" "$r" "$W_N" "$W_CPU" req
        s1=$(origin_syns)
        emit "inspect-$mode" "$t" rps "$r" "$W_RPS" req/s
        emit "inspect-$mode" "$t" errors "$r" "$W_ERR" count
        emit "inspect-$mode" "$t" origin_conns_per_req "$r" "$(fdiv "$((s1 - s0))" "$W_N")" conn
        emit "inspect-$mode" "$t" origin_conns "$r" "$((s1 - s0))" count
        log "inspect-$mode r$r $t: $W_RPS req/s ($W_ERR errors, $((s1 - s0)) origin connections for $W_N requests)"
        if [[ $t != direct ]] && ! is_running "${TGT_PROCS[$t]}"; then
          warn "inspect: ${TGT_PROCS[$t]} died during inspect-$mode r$r $t: $(tail -3 "$WORK/logs/${TGT_PROCS[$t]}.out")"
          emit "inspect-$mode" "$t" died "$r" 1 bool
        fi
      done
    done
  done
  m1=$(rss_kb "$(pid_of airlock-insp)")
  emit inspect-keep airlock-inspect proxy_rss_mib_after 1 "$(fdiv "$m1" 1024)" MiB
  log "inspect: airlock RSS $((m0 / 1024)) MiB after the warm-up, $((m1 / 1024)) MiB after the rounds"
  nft_direct
  # what airlock logged: every inspected request has an http line
  if [[ -s $WORK/logs/airlock-insp-decisions.jsonl ]]; then
    python3 "$HERE/lib/decisions.py" "$WORK/logs/airlock-insp-decisions.jsonl" "$WORK/logs/airlock-insp.out" \
      >"$RESULTS/airlock-inspect-log.md"
  fi
  stop_bg squid-bump
  stop_bg airlock-insp
}
