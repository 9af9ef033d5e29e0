# shellcheck shell=bash
# The scenarios. Each writes rows to $RESULTS/raw.tsv through emit():
#   scenario  target  metric  round  value  unit
# Rounds interleave the targets, in an order rotated every round, so the slow drift of a
# shared machine hits each target alike; report.py takes ratios within a round.

# rotate N A B C... : the list rotated by N
rotate() { local n=$1; shift; local a=("$@") k=$# i; for ((i = 0; i < k; i++)); do printf '%s ' "${a[$(((i + n) % k))]}"; done; }

# targets_for COLUMN : the running targets that handle TLS (1), HTTP (2) or opaque TCP (3)
targets_for() {
  local t p out=()
  for t in $TARGETS; do
    target_ok "$t" || continue
    p=$(awk -v c="$1" '{print $c}' <<<"${TGT_PORTS[$t]}")
    [[ $t == direct || ( -n $p && $p != - ) ]] && out+=("$t")
  done
  echo "${out[*]}"
}

# check_filter SCENARIO TARGET SCHEME : the allowed name passes, the other is blocked.
check_filter() {
  local a b
  a=$(inns "$NS_C" curl -s -m 5 --cacert "$WORK/pki/ca.pem" -o /dev/null -w '%{http_code}' "$3://$HOST_OK/small.html")
  b=$(inns "$NS_C" curl -s -m 5 --cacert "$WORK/pki/ca.pem" -o /dev/null -w '%{http_code}' "$3://$HOST_BAD/small.html")
  emit "$1" "$2" allowed_ok 0 "$([[ $a == 200 ]] && echo 1 || echo 0)" bool
  emit "$1" "$2" denied_blocked 0 "$([[ $b != 200 ]] && echo 1 || echo 0)" bool
  [[ $2 == direct || $2 == floor || $b != 200 ]] || warn "$1/$2: a name on no allowlist was NOT blocked"
  [[ $a == 200 ]] || { warn "$1/$2: the allowed name failed (HTTP code $a); target skipped"; return 1; }
}

# run_wrk URL SECONDS CONNECTIONS -> W_N W_RPS W_ERR W_CPU
run_wrk() {
  local out=$WORK/tmp/wrk.out tm=$WORK/tmp/wrk.time
  bounded $(($2 + 30)) ip netns exec "$NS_C" /usr/bin/time -f '%U %S' -o "$tm" \
    wrk -t"$WRK_T" -c"$3" -d"${2}s" --timeout 5s -H 'Connection: close' "$1" >"$out" 2>&1
  W_N=$(awk '/requests in/{print $1}' "$out")
  W_RPS=$(awk '/^Requests\/sec/{print $2}' "$out")
  W_ERR=$(awk '/Socket errors/{gsub(",", ""); e += $4 + $6 + $8 + $10} /Non-2xx/{e += $NF} END{print e + 0}' "$out")
  W_CPU=$(awk '{print $1 + $2}' "$tm" 2>/dev/null)
  [[ -n $W_N && -n $W_RPS ]] || { warn "wrk failed: $(tail -3 "$out")"; W_N=0 W_RPS=0 W_CPU=0; return 1; }
}

# ---- https, http: new connections per second (wrk, Connection: close) -------------------
scenario_rate() {
  local sc=$1 scheme=$2 col=$3 t r targets=()
  for t in $(targets_for "$col"); do
    route_target "$t"
    check_filter "$sc" "$t" "$scheme" || continue
    run_wrk "$scheme://$HOST_OK/small.html" 1 "$WRK_C" >/dev/null  # warm-up
    targets+=("$t")
  done
  for ((r = 1; r <= ROUNDS; r++)); do
    for t in $(rotate "$r" "${targets[@]}"); do
      route_target "$t"
      acct_start "$(target_pids "$t")" "$(pid_of origin)"
      run_wrk "$scheme://$HOST_OK/small.html" "$DUR" "$WRK_C"
      acct_end "$sc" "$t" "$r" "$W_N" "$W_CPU" req
      emit "$sc" "$t" rps "$r" "$W_RPS" req/s
      emit "$sc" "$t" errors "$r" "$W_ERR" count
      log "$sc r$r $t: $W_RPS req/s ($W_ERR errors)"
    done
  done
  nft_direct
}
scenario_https() { scenario_rate https https 1; }
scenario_http() { scenario_rate http http 2; }

# ---- bulk: one large file over one TLS connection (curl) -----------------------------------
scenario_bulk() {
  local t r out v targets
  targets=$(targets_for 1)
  cat "$WORK/www/big.bin" >/dev/null  # back into the page cache (this VM pages out idle files)
  for t in $targets; do  # warm-up: the first transfer through a fresh path is slow
    route_target "$t"
    bounded 60 ip netns exec "$NS_C" curl -s -m 50 --cacert "$WORK/pki/ca.pem" -o /dev/null -r 0-33554431 \
      "https://$HOST_OK/big.bin"
  done
  for ((r = 1; r <= BULK_ROUNDS; r++)); do
    for t in $(rotate "$r" $targets); do
      route_target "$t"
      acct_start "$(target_pids "$t")" "$(pid_of origin)"
      bounded 120 ip netns exec "$NS_C" /usr/bin/time -f 'CPU %U %S' curl -s -m 100 --cacert "$WORK/pki/ca.pem" \
        -o /dev/null -w '%{http_code} %{size_download} %{speed_download}\n' "https://$HOST_OK/big.bin" >"$WORK/tmp/bulk.out" 2>&1
      out=$(<"$WORK/tmp/bulk.out")
      v=$(awk '$1 == "200" {printf "%.1f", $3 / 1048576}' <<<"$out")
      acct_end bulk "$t" "$r" "$(fdiv "$BULK_MB" 1024)" "$(awk '/^CPU/{print $2 + $3}' <<<"$out")" GiB
      emit bulk "$t" MiBps "$r" "${v:-0}" MiB/s
      log "bulk r$r $t: ${v:-FAIL} MiB/s"
    done
  done
  nft_direct
}

# ---- bulk-tcp: one large stream over one opaque TCP connection (neither TLS nor HTTP) ------
# The origin's raw byte source (lib/tcp_bulk.py serve, sendfile of the same large file) on
# :$PORT_RAW; the client sends one lower-case line ("bytes N", no TLS record, no HTTP
# method: airlock classifies it as opaque at once, without waiting out its quiet limit) and
# reads to the end. A transfer counts only when exactly N bytes arrived.

# tcp_fetch HOST BYTES LIMIT_S : one transfer; the client's line in T_OUT, its CPU in T_CPU
tcp_fetch() {
  local rc
  bounded $(($3 + 20)) ip netns exec "$NS_C" /usr/bin/time -f 'CPU %U %S' \
    "$TCP_PY" "$HERE/lib/tcp_bulk.py" fetch "$1" "$PORT_RAW" "$2" "$3" >"$WORK/tmp/bulk-tcp.out" 2>&1
  rc=$?
  T_OUT=$(grep '^bytes=' "$WORK/tmp/bulk-tcp.out" | head -1)
  T_CPU=$(awk '/^CPU/{print $2 + $3}' "$WORK/tmp/bulk-tcp.out")
  return $rc
}

# check_tcp TARGET : the origin's address passes (1 MiB, complete); the gateway's own
# address on the same port (198.18.1.1: outside the origin's /24, which every target's rule
# allows) is refused, reset or closed before a byte (direct: nothing listens there).
check_tcp() {
  local a=0 b=0
  tcp_fetch "$IP_S" 1048576 20 && a=1
  local ok_line=$T_OUT
  tcp_fetch "$IP_GC" 1048576 20 || b=1
  emit bulk-tcp "$1" allowed_ok 0 "$a" bool
  emit bulk-tcp "$1" denied_blocked 0 "$b" bool
  [[ $b == 1 ]] || warn "bulk-tcp/$1: a destination outside the allowed /24 was NOT blocked ($T_OUT)"
  [[ $a == 1 ]] || { warn "bulk-tcp/$1: the origin's raw source failed ($ok_line); target skipped"; return 1; }
}

# airlock_tcp_log : what airlock's decision log says about the connections to the raw source
# (written when each ends): counts by proto/verdict/reason/notes, and how many were allowed
# as opaque TCP (proto tcp, cidr_allowed, upstream the original destination)
airlock_tcp_log() {
  local f=$WORK/logs/airlock-decisions.jsonl
  [[ -s $f ]] || { warn "bulk-tcp: airlock's decision log is empty"; return; }
  sleep 0.5  # the log's writer thread
  DST="$IP_S:$PORT_RAW" python3 - "$f" <<'EOF2'
import collections, json, os, sys
dst, c, opaque = os.environ["DST"], collections.Counter(), 0
for line in open(sys.argv[1], errors="replace"):
    if dst not in line:
        continue
    try:
        d = json.loads(line)
    except ValueError:
        continue
    if d.get("event") != "connect" or d.get("dst") != dst:
        continue
    c[(d.get("proto"), d.get("verdict"), d.get("reason"), ",".join(d.get("notes") or []))] += 1
    if d.get("proto") == "tcp" and d.get("verdict") == "allow" and d.get("reason") == "cidr_allowed" \
            and d.get("upstream") == dst and not d.get("name"):
        opaque += 1
print(opaque, sum(c.values()) - opaque, "; ".join(f"{n} x {'/'.join(k[:3])}{' [' + k[3] + ']' if k[3] else ''}"
                                               for k, n in c.most_common()))
EOF2
}

scenario_bulk-tcp() {
  local t r v ok targets=() n_op n_other what
  # the interpreter itself, not a wrapper (a pyenv shim costs ~0.1 s of CPU per start)
  TCP_PY=$(python3 -c 'import sys; print(sys.executable)')
  start_rawsrc || { warn "bulk-tcp: the raw TCP source did not start: $(tail -3 "$WORK/logs/rawsrc.out")"; return; }
  for t in $TARGETS; do
    target_ok "$t" || continue
    [[ " $(targets_for 3) " == *" $t "* ]] || { log "bulk-tcp: $t skipped (no opaque TCP relay set up for it)"; continue; }
    route_target "$t"
    check_tcp "$t" || continue
    targets+=("$t")
  done
  [[ ${#targets[@]} -gt 0 ]] || { nft_direct; return; }
  cat "$WORK/www/big.bin" >/dev/null  # back into the page cache (this VM pages out idle files)
  for t in "${targets[@]}"; do  # warm-up: the first transfer through a fresh path is slow
    route_target "$t"
    tcp_fetch "$IP_S" 33554432 50 >/dev/null
  done
  for ((r = 1; r <= BULK_ROUNDS; r++)); do
    for t in $(rotate "$r" "${targets[@]}"); do
      route_target "$t"
      acct_start "$(target_pids "$t")" "$(pid_of rawsrc)"
      ok=0
      tcp_fetch "$IP_S" $((BULK_MB * 1048576)) 100 && ok=1
      v=$(sed -n 's/.*MiBps=\([0-9.]*\).*/\1/p' <<<"$T_OUT")
      [[ $ok == 1 ]] || v=0
      acct_end bulk-tcp "$t" "$r" "$(fdiv "$BULK_MB" 1024)" "${T_CPU:-0}" GiB
      emit bulk-tcp "$t" MiBps "$r" "${v:-0}" MiB/s
      emit bulk-tcp "$t" errors "$r" "$((1 - ok))" count
      if [[ $ok == 1 ]]; then log "bulk-tcp r$r $t: $v MiB/s"; else log "bulk-tcp r$r $t: FAIL ($T_OUT)"; fi
    done
  done
  nft_direct
  # One airlock process serves both airlock targets and logs the transfers of each.
  local airlocks=0
  for t in "${targets[@]}"; do [[ $t == airlock || $t == airlock-tproxy ]] && airlocks=$((airlocks + 1)); done
  if [[ $airlocks -gt 0 ]]; then
    read -r n_op n_other what < <(airlock_tcp_log)
    emit bulk-tcp airlock log_opaque_allowed 0 "${n_op:-0}" count
    emit bulk-tcp airlock log_other 0 "${n_other:-0}" count
    log "bulk-tcp: airlock's decision log for $IP_S:$PORT_RAW: ${what:-nothing}"
    [[ ${n_op:-0} -eq $(((BULK_ROUNDS + 2) * airlocks)) && ${n_other:-0} -eq 0 ]] ||
      warn "bulk-tcp: airlock logged ${n_op:-0} opaque TCP allows (and ${n_other:-0} other lines) for $(((BULK_ROUNDS + 2) * airlocks)) transfers (check, warm-up, rounds; $airlocks airlock targets)"
  fi
}

# ---- latency: one request at a time (connect + TLS + request + response) -------------------
# latency_rounds SCHEME N : LAT_ROUNDS rounds of N sequential requests per target, rotated.
latency_rounds() {
  local scheme=$1 n=$2 t r col
  col=$([[ $scheme == https ]] && echo 1 || echo 2)
  for ((r = 1; r <= LAT_ROUNDS; r++)); do
    for t in $(rotate "$r" $(targets_for "$col")); do
      route_target "$t"
      bounded $((n / 2 + 120)) ip netns exec "$NS_C" curl -s --http1.1 --no-sessionid -H 'Connection: close' \
        --cacert "$WORK/pki/ca.pem" \
        -o /dev/null -w '%{http_code} %{time_total} %{time_connect} %{time_appconnect} %{time_starttransfer}\n' \
        "$scheme://$HOST_OK/small.html?[1-$n]" >"$WORK/tmp/lat.out"
      python3 "$HERE/lib/percentiles.py" "$WORK/tmp/lat.out" "latency-$scheme" "$t" "$r" >>"$RESULTS/raw.tsv"
    done
  done
  log "latency-$scheme: done"
  nft_direct
}
scenario_latency() { latency_rounds https "$LAT_N" && latency_rounds http "$LAT_N"; }
# HTTPS alone, with more requests: a goal of a few hundredths of a millisecond on the added
# p50 needs thousands of samples per target (one target moves 0.3 ms between short runs).
scenario_latency-https() { latency_rounds https "$LAT_HTTPS_N"; }

# ---- idle: memory per idle TLS connection held through the proxy ---------------------------
scenario_idle() {
  local t m0 m1 s0 s1 hp n
  # Not direct: without a proxy there is nothing to weigh, and 5,000 TLS handshakes cost
  # half a minute of this machine.
  for t in $(targets_for 1); do
    [[ $t == direct ]] && continue
    route_target "$t"
    # fresh processes: the load of earlier scenarios must not have grown the heaps already
    if [[ $t == direct ]]; then stop_bg origin; start_origin; else restart_target "$t" || { warn "idle: $t did not restart"; continue; }; fi
    # a few connections first, so lazy one-time allocations are not counted per connection
    bounded 60 ip netns exec "$NS_C" "$LOADGEN" idle --connect "$IP_S:443" --sni "$HOST_OK" --ca "$WORK/pki/ca.pem" -n 50 --hold 0 >/dev/null 2>&1
    sleep 1
    m0=$(rss_kb $(target_pids "$t")) s0=$(rss_kb "$(pid_of origin)")
    rm -f "$WORK/tmp/idle.ready"
    : >"$WORK/logs/idle-load.out"
    start_bg idle-load "$NS_C" timeout 300 "$LOADGEN" idle --connect "$IP_S:443" --sni "$HOST_OK" --ca "$WORK/pki/ca.pem" \
      -n "$IDLE_N" -c 64 --hold 120 --ready-file "$WORK/tmp/idle.ready"
    hp=$(pid_of idle-load)
    for _ in $(seq 1200); do [[ -e $WORK/tmp/idle.ready ]] && break; kill -0 $hp 2>/dev/null || break; sleep 0.1; done
    sleep 1
    n=$(cat "$WORK/tmp/idle.ready" 2>/dev/null || echo 0)
    m1=$(rss_kb $(target_pids "$t")) s1=$(rss_kb "$(pid_of origin)")
    stop_bg idle-load
    cp "$WORK/logs/idle-load.out" "$WORK/tmp/idle.out"
    if [[ ${n:-0} -gt 0 ]]; then
      [[ $t != direct ]] && emit idle "$t" proxy_kib_per_conn 1 "$(fdiv "$((m1 - m0))" "$n")" KiB
      [[ $t != direct ]] && emit idle "$t" proxy_rss_mib_before 1 "$(fdiv "$m0" 1024)" MiB
      emit idle "$t" origin_kib_per_conn 1 "$(fdiv "$((s1 - s0))" "$n")" KiB
      emit idle "$t" conns 1 "$n" count
      log "idle $t: $n connections, proxy +$(((m1 - m0) / 1024)) MiB ($(fdiv "$((m1 - m0))" "$n") KiB each), origin +$(((s1 - s0) / 1024)) MiB; $(head -1 "$WORK/tmp/idle.out")"
    else
      warn "idle $t: no connection held: $(tail -2 "$WORK/tmp/idle.out")"
    fi
  done
  nft_direct
}

# ---- hello: ClientHellos cut into segments, and trickled slowly (bench_loadgen) -----------------
# run_hello SCENARIO TARGET ROUND SEGMENTS GAP_MS CONCURRENCY SECONDS
run_hello() {
  local out kv
  acct_start "$(target_pids "$2")" "$(pid_of origin)"
  bounded $(($7 + 30)) ip netns exec "$NS_C" /usr/bin/time -f 'CPU %U %S' "$LOADGEN" hello --connect "$IP_S:443" \
    --sni "$HOST_OK" --segments "$4" --gap-ms "$5" -c "$6" --duration "$7" >"$WORK/tmp/hello.out" 2>&1
  out=$(<"$WORK/tmp/hello.out")
  kv() { sed -n "s/.*\b$1=\([^ ]*\).*/\1/p" <<<"$out" | head -1; }
  acct_end "$1" "$2" "$3" "$(kv answered)" "$(awk '/^CPU/{print $2 + $3}' <<<"$out")" hello
  emit "$1" "$2" answered_per_s "$3" "$(kv answered_per_s)" hello/s
  emit "$1" "$2" p50_ms "$3" "$(kv p50_ms)" ms
  emit "$1" "$2" p99_ms "$3" "$(kv p99_ms)" ms
  emit "$1" "$2" failed "$3" "$(kv failed)" count
  log "$1 r$3 $2: $(head -1 <<<"$out")"
}

scenario_hello() {
  local t r targets
  targets=$(targets_for 1)
  for ((r = 1; r <= HELLO_ROUNDS; r++)); do
    for t in $(rotate "$r" $targets); do
      route_target "$t"
      run_hello hello-whole "$t" "$r" 1 0 "$HELLO_C" "$HELLO_DUR"
      run_hello hello-segmented "$t" "$r" "$HELLO_SEGMENTS" "$HELLO_GAP_MS" "$HELLO_C" "$HELLO_DUR"
    done
  done
  # slow senders: one round, it measures whether they are served, not a rate
  for t in $targets; do
    route_target "$t"
    run_hello hello-slow "$t" 1 "$SLOW_SEGMENTS" "$SLOW_GAP_MS" "$SLOW_C" "$((HELLO_DUR + 2))"
  done
  nft_direct
}

# ---- dns: dnsperf against each resolver, cache hits, misses, denied names ----------------------
# run_dnsperf ADDR PORT FILE SECONDS -> D_QPS D_N D_LOST D_CPU D_RC
run_dnsperf() {
  local out=$WORK/tmp/dnsperf.out
  bounded $(($4 + 20)) ip netns exec "$NS_C" /usr/bin/time -f 'CPU %U %S' \
    dnsperf -s "$1" -p "$2" -d "$3" -l "$4" -c "$DNSPERF_C" -T "$DNSPERF_T" -q "$DNSPERF_Q" -t 1 >"$out" 2>&1
  D_QPS=$(awk '/Queries per second/{print $4}' "$out")
  D_N=$(awk '/Queries completed/{print $3}' "$out")
  D_LOST=$(awk '/Queries lost/{print $3}' "$out")
  D_CPU=$(awk '/^CPU/{print $2 + $3}' "$out")
  D_RC=$(awk '/Response codes/{sub(/.*Response codes: /, ""); gsub(/ /, ""); print}' "$out")
}

scenario_dns() {
  local r t a p ok bad live=() mix file
  start_resolvers $RESOLVERS
  for t in $RESOLVERS; do
    target_ok "dns-$t" || continue
    a=$(dns_addr "$t") p=${DNS_PORT[$t]}
    ok=$(inns "$NS_C" dig +tries=2 +time=2 @"$a" -p "$p" "a1.$ZONE_OK" A +short 2>/dev/null | head -1)
    bad=$(inns "$NS_C" dig +tries=2 +time=2 @"$a" -p "$p" "d1.$ZONE_BAD" A +short 2>/dev/null | head -1)
    emit dns-hit "$t" allowed_ok 0 "$([[ $ok == "$IP_S" ]] && echo 1 || echo 0)" bool
    emit dns-hit "$t" denied_blocked 0 "$([[ $bad != "$IP_S" ]] && echo 1 || echo 0)" bool
    [[ $ok == "$IP_S" ]] || { warn "dns $t: the allowed name did not resolve (got '$ok'); skipped"; continue; }
    [[ $t == auth || $bad != "$IP_S" ]] || warn "dns $t: a name on no allowlist resolved"
    run_dnsperf "$a" "$p" "$WORK/dns/hits.txt" 1  # fills the caches: every hits.txt name asked
    live+=("$t")
  done
  for ((r = 1; r <= ROUNDS; r++)); do
    for mix in hit miss denied; do
      for t in $(rotate "$r" "${live[@]}"); do
        [[ $t == auth && $mix != hit ]] && continue  # NSD: the ceiling for answers, and no filter
        a=$(dns_addr "$t") p=${DNS_PORT[$t]}
        case $mix in
          hit) file=$WORK/dns/hits.txt ;;
          miss) file=$(misses_file "r$r$t") ;;
          denied) file=$WORK/dns/denied.txt ;;
        esac
        if [[ $t == auth ]]; then acct_start "" "$(pid_of nsd)"; else acct_start "$(pid_of "${DNS_PROC[$t]}")" "$(pid_of nsd)"; fi
        run_dnsperf "$a" "$p" "$file" "$DNS_DUR"
        acct_end "dns-$mix" "$t" "$r" "${D_N:-0}" "${D_CPU:-0}" query
        emit "dns-$mix" "$t" qps "$r" "${D_QPS:-0}" q/s
        emit "dns-$mix" "$t" lost "$r" "${D_LOST:-0}" count
        log "dns-$mix r$r $t: ${D_QPS:-FAIL} q/s, lost ${D_LOST:-?}, rcodes ${D_RC:-?}"
      done
    done
  done
}

# ---- decide: the policy engine alone (policy_decide_bench), 10, 1k and 100k rules ---------------
scenario_decide() {
  local out=$WORK/tmp/decide.csv
  bounded 300 "$DECIDE_BENCH" --benchmark_filter='^decide/[a-z_0-9]+/rules:[0-9]+$' \
    --benchmark_repetitions="$DECIDE_REPS" --benchmark_report_aggregates_only=true --benchmark_min_time=0.1 \
    --benchmark_format=csv >"$out" 2>"$WORK/logs/decide.err" || { warn "policy_decide_bench failed"; return; }
  # "decide/exact_hit/rules:1000_median",3,232.1,... -> decide exact_hit rules:1000 ns
  awk -F, '$1 ~ /_median"$/ { gsub(/"/, "", $1); sub(/_median$/, "", $1); split($1, p, "/");
    printf "decide\t%s\t%s_ns\t1\t%s\tns\n", p[3], p[2], $4 }' "$out" >>"$RESULTS/raw.tsv"
  log "decide: $(grep -c '^decide' "$RESULTS/raw.tsv") medians"
}

# ---- scale: new plain-HTTP connections per second against concurrency ----------------------------
scenario_scale() {
  local t r c targets
  targets=$(targets_for 2)
  for ((r = 1; r <= SCALE_ROUNDS; r++)); do
    for c in $SCALE_LEVELS; do
      for t in $(rotate "$r" $targets); do
        route_target "$t"
        acct_start "$(target_pids "$t")" "$(pid_of origin)"
        run_wrk "http://$HOST_OK/small.html" "$SCALE_DUR" "$c"
        acct_end "scale-c$c" "$t" "$r" "$W_N" "$W_CPU" req
        emit "scale-c$c" "$t" rps "$r" "$W_RPS" req/s
        emit "scale-c$c" "$t" errors "$r" "$W_ERR" count
        log "scale c=$c r$r $t: $W_RPS req/s ($W_ERR errors)"
        # Thousands of connections aborted at the end of a run keep the origin and the
        # tables busy for seconds; without a pause the next target starts in that storm
        # (at 9,500 the next one measured 0 requests/s).
        sleep "$(awk -v c="$c" 'BEGIN { print (c < 1000 ? 0.5 : c / 2000) }')"
      done
    done
  done
  nft_direct
}
