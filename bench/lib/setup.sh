# shellcheck shell=bash
# Per-run material under $WORK: test CA and origin certificate, web root, the allowlist in
# each tool's syntax, zones and dnsperf inputs, and every config rendered from conf/.

gen_pki() {
  local d=$WORK/pki
  mkdir -p "$d"
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
    -keyout "$d/ca.key" -out "$d/ca.pem" -subj "/CN=airlock bench test CA" \
    -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign,digitalSignature \
    2>/dev/null || return 1
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$d/server.key" \
    -out "$d/server.csr" -subj "/CN=$HOST_OK" 2>/dev/null || return 1
  printf 'subjectAltName=DNS:%s,DNS:*.%s,DNS:%s,DNS:*.%s\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n' \
    "$ZONE_OK" "$ZONE_OK" "$ZONE_BAD" "$ZONE_BAD" >"$d/server.ext"
  openssl x509 -req -in "$d/server.csr" -CA "$d/ca.pem" -CAkey "$d/ca.key" -CAcreateserial \
    -out "$d/server.pem" -days 2 -extfile "$d/server.ext" 2>/dev/null
}

gen_www() {
  mkdir -p "$WORK/www"
  head -c 1024 /dev/zero | tr '\0' 'x' >"$WORK/www/small.html"
  # Sparse (costs no disk); read once so the page cache holds it before the bulk runs.
  truncate -s "${BULK_MB}M" "$WORK/www/big.bin"
  cat "$WORK/www/big.bin" >/dev/null
}

# ALLOW_N entries, each meaning "this domain and its subdomains", the allowed zone in the
# middle so a linear matcher pays an average scan, not a best case.
gen_allow() {
  local d=$WORK/allow i mid=$((ALLOW_N / 2))
  mkdir -p "$d"
  for ((i = 1; i < ALLOW_N; i++)); do
    [[ $i -eq $mid ]] && echo "$ZONE_OK"
    echo "s$i.corp$((i % 97)).example"
  done >"$d/allow.txt"
  [[ $ALLOW_N -le 1 ]] && echo "$ZONE_OK" >"$d/allow.txt"
  cp "$d/allow.txt" "$d/haproxy-exact.lst"
  sed 's/^/./' "$d/allow.txt" >"$d/haproxy-suffix.lst"
  sed 's/^\(.*\)$/.\1 1;/' "$d/allow.txt" >"$d/nginx.map"
  sed 's/^/./' "$d/allow.txt" >"$d/squid.txt"
  sed "s|^\(.*\)\$|server=/\1/$IP_S|" "$d/allow.txt" >"$d/dnsmasq-servers.conf"
  sed 's/^\(.*\)$/  local-zone: "\1." transparent/' "$d/allow.txt" >"$d/unbound-allow.conf"
  sed 's/^\(.*\)$/      - host: \1\n      - host: "*.\1"/' "$d/allow.txt" >"$d/airlock-rules.yaml"
}

gen_dns() {
  local d=$WORK/dns
  mkdir -p "$d"
  ZONE=$ZONE_OK python3 "$HERE/lib/render.py" "$HERE/conf/zone.tmpl" "$d/ok.zone" || return 1
  ZONE=$ZONE_BAD python3 "$HERE/lib/render.py" "$HERE/conf/zone.tmpl" "$d/bad.zone" || return 1
  # hits: DNS_NAMES allowed names, asked once before measuring; denied: names on no list
  for ((i = 0; i < DNS_NAMES; i++)); do echo "a$i.$ZONE_OK A"; done >"$d/hits.txt"
  for ((i = 0; i < DNS_NAMES; i++)); do echo "d$i.$ZONE_BAD A"; done >"$d/denied.txt"
}

# misses_file TAG : DNS_MISS_N allowed names nobody has asked before (unique per TAG)
misses_file() {
  awk -v n="$DNS_MISS_N" -v tag="$1" -v z="$ZONE_OK" 'BEGIN{ for (i = 0; i < n; i++) printf "m%d-%s.%s A\n", i, tag, z }' \
    >"$WORK/dns/misses.txt"
  echo "$WORK/dns/misses.txt"
}

render_all() {
  local f
  for f in origin-nginx.conf nsd.conf haproxy.cfg nginx-gw.conf squid.conf airlock.yaml \
           unbound-filter.conf dnsmasq.conf dnsdist.conf; do
    python3 "$HERE/lib/render.py" "$HERE/conf/$f" "$WORK/cfg/$f" || return 1
  done
  # airlock's allow list is generated: splice it in after the marker line
  sed -i "/#ALLOW_RULES#/{
r $WORK/allow/airlock-rules.yaml
d
}" "$WORK/cfg/airlock.yaml"
  # AIRLOCK_THREADS=N measures airlock with N event loops (default: threads: auto).
  if [[ -n ${AIRLOCK_THREADS:-} ]]; then echo "threads: $AIRLOCK_THREADS" >>"$WORK/cfg/airlock.yaml"; fi
}

setup_material() {
  mkdir -p "$WORK"/{cfg,run,tmp,logs,pids}
  gen_pki && gen_www && gen_allow && gen_dns && render_all || return 1
  # squid and nsd drop privileges: let them read configs and write logs
  chmod 755 "$WORK"
  chmod -R a+rX "$WORK"
  chmod 1777 "$WORK/logs" "$WORK/tmp" "$WORK/run"
}
