# shellcheck shell=bash
# The inspect-h2 scenario: HTTPS requests through a TLS-inspecting proxy when the client
# speaks HTTP/2, against the same proxy spoken to in HTTP/1.1, and against squid ssl_bump
# (which bumps HTTP/1.1 only: squid 5 offers no h2 to the client it bumps, so it is measured
# in HTTP/1.1, and a client offering only h2 is checked to get no h2 from it). Variants:
#   airlock-h2   airlock, inspect: true; the client offers only h2, the origin speaks h2
#                (airlock offers h2 to the sandbox only when the origin chose it)
#   airlock-h1   the same airlock, the client offers only http/1.1
#   squid-h1     squid 5 ssl_bump, bump mode (conf/squid-bump.conf), http/1.1
#   direct-h2    no proxy, h2 (context: what the two ends cost alone)
#   direct-h1    no proxy, http/1.1
# Two shapes, the same client for every variant of a shape:
#   inspect-h2-new   new connections, one request each: bench_loadgen requests (a full TLS
#                    handshake per connection, no resumption), -c INSP_C
#   inspect-h2-keep  kept-alive connections: h2load -c INSP_C -m 1 (one stream at a time per
#                    connection, so h2 and h1 run at the same concurrency), --h1 for HTTP/1.1
# Sourced by bench/run after inspect.sh, whose setup (inspect_material) and starters it
# uses; bench/README.md says more.

H2_VARIANTS=${H2_VARIANTS:-"direct-h2 direct-h1 airlock-h2 airlock-h1 squid-h1"}

# the inspect scenario's target behind a variant, and the ALPN the client offers
h2_target() { case $1 in airlock-*) echo airlock-inspect ;; squid-*) echo squid-bump ;; *) echo direct ;; esac; }
h2_alpn() { [[ $1 == *-h2 ]] && echo h2 || echo http/1.1; }

# origin_h2 on|off : the origin's :443 with or without h2 in its ALPN (nginx enables it per
# listening socket). Only this scenario turns it on, and it turns it off again: the other
# scenarios' clients (curl in bulk and latency, bench/wire) measure HTTP/1.1.
origin_h2() {
  local cfg=$WORK/cfg/origin-nginx.conf want=1.1 v _
  if [[ $1 == on ]]; then
    sed -i "s|^\(    listen $IP_S:443 ssl\) backlog|\1 http2 backlog|" "$cfg"
    want=2
  else
    sed -i "s|^\(    listen $IP_S:443 ssl\) http2 backlog|\1 backlog|" "$cfg"
  fi
  kill -HUP "$(pid_of origin)" || return 1
  for _ in $(seq 50); do
    v=$(inns "$NS_C" curl -s -m 2 --http2 --cacert "$WORK/pki/ca.pem" -o /dev/null -w '%{http_version}' \
      --resolve "$HOST_OK:443:$IP_S" "https://$HOST_OK/small.html")
    [[ $v == "$want" ]] && return 0
    sleep 0.2
  done
  warn "the origin did not switch to HTTP/$want (curl saw '$v')"
  return 1
}

# h2_new VARIANT SECONDS -> W_N W_RPS W_ERR W_CPU (as inspect_wrk), W_OUT (bench_loadgen's line)
h2_new() {
  local t tm=$WORK/tmp/lg.time
  t=$(h2_target "$1")
  W_OUT=$(bounded $(($2 + 30)) ip netns exec "$NS_C" /usr/bin/time -f '%U %S' -o "$tm" \
    "$LOADGEN" requests --connect "$IP_S:443" --sni "${INSP_URLHOST[$t]}" --ca "${INSP_CA[$t]}" \
    --path /small.html -c "$INSP_C" --duration "$2" --alpn "$(h2_alpn "$1")" 2>&1)
  W_N=$(sed -n 's/.* ok=\([0-9]*\).*/\1/p' <<<"$W_OUT")
  W_RPS=$(sed -n 's/.* rps=\([0-9.]*\).*/\1/p' <<<"$W_OUT")
  W_ERR=$(sed -n 's/.* failed=\([0-9]*\).*/\1/p' <<<"$W_OUT")
  W_CPU=$(awk '{print $1 + $2}' "$tm" 2>/dev/null)
  [[ -n $W_N && -n $W_RPS ]] || { warn "bench_loadgen failed: $W_OUT"; W_N=0 W_RPS=0 W_ERR=0 W_CPU=0; return 1; }
}

# h2_keep VARIANT SECONDS -> W_N W_RPS W_ERR W_CPU
h2_keep() {
  local t out=$WORK/tmp/h2load.out tm=$WORK/tmp/h2load.time proto=()
  t=$(h2_target "$1")
  [[ $(h2_alpn "$1") == h2 ]] || proto=(--h1)
  # h2load verifies nothing; the checks before measuring did (bench_loadgen, with the CA).
  bounded $(($2 + 30)) ip netns exec "$NS_C" /usr/bin/time -f '%U %S' -o "$tm" \
    h2load -t "$WRK_T" -c "$INSP_C" -m 1 -D "$2" "${proto[@]}" "https://${INSP_URLHOST[$t]}/small.html" >"$out" 2>&1
  W_N=$(awk '/^requests:/{print $8}' "$out")
  W_ERR=$(awk '/^requests:/{print $10 + $12}' "$out")
  W_RPS=$(awk '/^finished in/{gsub(",", ""); print $4}' "$out")
  W_CPU=$(awk '{print $1 + $2}' "$tm" 2>/dev/null)
  [[ -n $W_N && -n $W_RPS ]] || { warn "h2load failed: $(tail -3 "$out")"; W_N=0 W_RPS=0 W_CPU=0; return 1; }
  grep -qx "Application protocol: $(h2_alpn "$1")" "$out" ||
    warn "inspect-h2/$1: h2load spoke $(sed -n 's/^Application protocol: //p' "$out"), not $(h2_alpn "$1")"
}

# h2_check VARIANT : one connection of the variant, verified, answers 200 in its protocol;
# for squid, a client offering only h2 gets no h2 (the reason it is measured in HTTP/1.1).
h2_check() {
  local v=$1 t out
  t=$(h2_target "$v")
  out=$(bounded 20 ip netns exec "$NS_C" "$LOADGEN" requests --connect "$IP_S:443" --sni "${INSP_URLHOST[$t]}" \
    --ca "${INSP_CA[$t]}" --path /small.html -c 1 --duration 1 --alpn "$(h2_alpn "$v")" 2>&1)
  log "inspect-h2 check $v: $out"
  echo "inspect-h2 check $v: $out" >>"$RESULTS/meta.txt"
  emit inspect-h2-new "$v" allowed_ok 0 "$([[ $out == *" failed=0 "* && $out != *" ok=0 "* ]] && echo 1 || echo 0)" bool
  if [[ $t == squid-bump ]]; then
    out=$(bounded 20 ip netns exec "$NS_C" "$LOADGEN" requests --connect "$IP_S:443" --sni "${INSP_URLHOST[$t]}" \
      --ca "${INSP_CA[$t]}" --path /small.html -c 1 --duration 1 --alpn h2 2>&1)
    echo "inspect-h2 check $v offered only h2: $out" >>"$RESULTS/meta.txt"
    emit inspect-h2-new "$v" h2_refused 0 "$([[ $out == *" ok=0 "* ]] && echo 1 || echo 0)" bool
  fi
  [[ $out == *" ok="[1-9]* || $t == squid-bump ]] || { warn "inspect-h2/$v failed: $out; variant skipped"; return 1; }
}

scenario_inspect-h2() {
  local v t r mode variants=()
  inspect_material || { warn "inspect-h2: setup failed; scenario skipped"; return; }
  nft_direct
  origin_h2 on || { warn "inspect-h2: the origin speaks no h2; scenario skipped"; origin_h2 off; return; }
  for t in airlock-inspect squid-bump; do
    [[ " $H2_VARIANTS " == *" ${t%%-*}-"* ]] || continue
    ${TGT_START[$t]} || { warn "inspect-h2: $t did not start: $(tail -3 "$WORK/logs/${TGT_PROCS[$t]}.out")"; FAILED_TARGETS+=" $t"; }
  done
  for v in $H2_VARIANTS; do
    t=$(h2_target "$v")
    target_ok "$t" || continue
    route_target "$t"
    h2_check "$v" || continue
    h2_new "$v" 1 >/dev/null  # warm-up: leaves minted, caches filled
    h2_keep "$v" 1 >/dev/null
    variants+=("$v")
  done
  for ((r = 1; r <= ROUNDS; r++)); do
    for mode in new keep; do
      for v in $(rotate "$r" "${variants[@]}"); do
        t=$(h2_target "$v")
        route_target "$t"
        acct_start "$(target_pids "$t")" "$(pid_of origin)"
        "h2_$mode" "$v" "$DUR"
        acct_end "inspect-h2-$mode" "$v" "$r" "$W_N" "$W_CPU" req
        emit "inspect-h2-$mode" "$v" rps "$r" "$W_RPS" req/s
        emit "inspect-h2-$mode" "$v" errors "$r" "$W_ERR" count
        log "inspect-h2-$mode r$r $v: $W_RPS req/s ($W_ERR errors)"
        if [[ $t != direct ]] && ! is_running "${TGT_PROCS[$t]}"; then
          warn "inspect-h2: ${TGT_PROCS[$t]} died during inspect-h2-$mode r$r $v"
          emit "inspect-h2-$mode" "$v" died "$r" 1 bool
        fi
      done
    done
  done
  nft_direct
  origin_h2 off
  if [[ -s $WORK/logs/airlock-insp-decisions.jsonl ]]; then
    python3 "$HERE/lib/decisions.py" "$WORK/logs/airlock-insp-decisions.jsonl" "$WORK/logs/airlock-insp.out" \
      >"$RESULTS/airlock-inspect-h2-log.md"
  fi
  stop_bg squid-bump
  stop_bg airlock-insp
}
