#!/usr/bin/env bash
# setup.sh : three namespaces ($PFX-c/-g/-s, 198.18.101.0/24 and 198.18.102.0/24 only,
# no default routes, nothing in the root namespace), test PKI, origin nginx + NSD in -s,
# and in -g: airlock (REDIRECT ports + TPROXY port), HAProxy (REDIRECT), nginx stream
# (TPROXY, via bench/lib/tproxy_exec.py), floor_relay (TPROXY). The same topology, material
# and configs as bench/run (bench/lib/{topology,setup,targets}.sh, bench/conf/*), cut down
# to :443. teardown.sh undoes it. Needs WIRE_DIR (run_all.sh sets it).
set -euo pipefail
source "$(dirname "$0")/env.sh"
mkdir -p "$W"
[[ -f $PFX_FILE ]] && { echo "already set up ($PFX); run teardown.sh first" >&2; exit 1; }
[[ -x $AIRLOCK ]] || { echo "no airlock binary at $AIRLOCK (set AIRLOCK_BUILD)" >&2; exit 1; }
echo "$PFX" >"$PFX_FILE"
mkdir -p "$W"/{cfg,run,tmp,logs,pids,pki,www,allow,dns}

if [[ ! -x $FLOOR ]]; then
  log "no floor_relay in $AIRLOCK_BUILD/bench: compiling bench/floor_relay.cpp into $FLOOR (g++ -O2)"
  g++ -std=c++20 -O2 -o "$FLOOR" "$REPO/bench/floor_relay.cpp"
fi

# ---- topology: bench/run's own (three namespaces, routes between the two /24s only) ----
HOST_BAD=${HOST_BAD:-www.$ZONE_BAD}
source "$REPO/bench/lib/topology.sh"
topo_up

# ---- material (bench/lib/setup.sh) ----
d=$W/pki
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
  -keyout "$d/ca.key" -out "$d/ca.pem" -subj "/CN=wire study test CA" \
  -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign,digitalSignature 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$d/server.key" \
  -out "$d/server.csr" -subj "/CN=$HOST_OK" 2>/dev/null
printf 'subjectAltName=DNS:%s,DNS:*.%s,DNS:%s,DNS:*.%s\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n' \
  "$ZONE_OK" "$ZONE_OK" "$ZONE_BAD" "$ZONE_BAD" >"$d/server.ext"
openssl x509 -req -in "$d/server.csr" -CA "$d/ca.pem" -CAkey "$d/ca.key" -CAcreateserial \
  -out "$d/server.pem" -days 2 -extfile "$d/server.ext" 2>/dev/null
head -c 1024 /dev/zero | tr '\0' 'x' >"$W/www/small.html"
ALLOW_N=1000 mid=500
for ((i = 1; i < ALLOW_N; i++)); do [[ $i -eq $mid ]] && echo "$ZONE_OK"; echo "s$i.corp$((i % 97)).example"; done >"$W/allow/allow.txt"
cp "$W/allow/allow.txt" "$W/allow/haproxy-exact.lst"
sed 's/^/./' "$W/allow/allow.txt" >"$W/allow/haproxy-suffix.lst"
sed 's/^\(.*\)$/.\1 1;/' "$W/allow/allow.txt" >"$W/allow/nginx.map"
sed 's/^\(.*\)$/      - host: \1\n      - host: "*.\1"/' "$W/allow/allow.txt" >"$W/allow/airlock-rules.yaml"
export ZONE_OK ZONE_BAD WORK=$W IP_S IP_GC NET_C NET_S PORT_AIRLOCK PORT_AIRLOCK_TLS PORT_AIRLOCK_TP PORT_DNS_AIRLOCK \
  PORT_HAPROXY_TLS PORT_NGINX_TLS
export PORT_HAPROXY_HTTP=15080 PORT_HAPROXY_TCP=15900 PORT_NGINX_HTTP=16080 PORT_NGINX_TCP=16900 PORT_RAW=5201
export GW_THREADS=2 ORIGIN_WORKERS=2 NOFILE=8192 HAPROXY_MAXCONN=3900 NGINX_MODULES=/usr/lib/nginx/modules
export NGINX_HALF_CLOSE=${NGINX_HALF_CLOSE:-off}
# bench/conf's templates, unchanged (bench/wire keeps no configs of its own)
for f in origin-nginx.conf nsd.conf haproxy.cfg nginx-gw.conf airlock.yaml; do
  python3 "$BENCH_LIB/render.py" "$BENCH_CONF/$f" "$W/cfg/$f"
done
sed -i "/#ALLOW_RULES#/{
r $W/allow/airlock-rules.yaml
d
}" "$W/cfg/airlock.yaml"
ZONE=$ZONE_OK python3 "$BENCH_LIB/render.py" "$BENCH_CONF/zone.tmpl" "$W/dns/ok.zone"
ZONE=$ZONE_BAD python3 "$BENCH_LIB/render.py" "$BENCH_CONF/zone.tmpl" "$W/dns/bad.zone"
chmod 755 "$WIRE_DIR" "$W"; chmod -R a+rX "$W"; chmod 1777 "$W/logs" "$W/tmp" "$W/run"

# ---- servers and proxies (bench/lib/targets.sh) ----
start_bg origin "$NS_S" nginx -p "$W" -c "$W/cfg/origin-nginx.conf" -g 'daemon off;'
wait_listen "$NS_S" tcp 443 10 || { echo "origin did not start" >&2; exit 1; }
start_bg nsd "$NS_S" nsd -d -c "$W/cfg/nsd.conf"
wait_listen "$NS_S" udp 53 10 || { echo "nsd did not start" >&2; exit 1; }
"$WIRE_HERE/start_airlock.sh"
start_bg haproxy "$NS_G" haproxy -db -f "$W/cfg/haproxy.cfg"
wait_listen "$NS_G" tcp "$PORT_HAPROXY_TLS" 10 || { echo "haproxy did not start" >&2; exit 1; }
start_bg nginx-gw "$NS_G" python3 "$BENCH_LIB/tproxy_exec.py" "$PORT_NGINX_TLS,$PORT_NGINX_HTTP,$PORT_NGINX_TCP" -- \
  nginx -p "$W" -c "$W/cfg/nginx-gw.conf" -g 'daemon off;'
wait_listen "$NS_G" tcp "$PORT_NGINX_TLS" 10 || { echo "nginx-gw did not start" >&2; exit 1; }
start_bg floor "$NS_G" "$FLOOR" "$PORT_FLOOR" 2
wait_listen "$NS_G" tcp "$PORT_FLOOR" 10 || { echo "floor did not start" >&2; exit 1; }
log "set up $PFX: $(ls "$W/pids" | tr '\n' ' ')"
