# A three-namespace world for end-to-end tests and the demo:
#
#   ${P}-sbx 198.51.100.2 --veth-- 198.51.100.1 ${P}-gw 203.0.113.1 --veth-- ${P}-net
#   sandbox (curl, dig)            airlock + its nft table                 unbound 203.0.113.53
#   default route via the gateway, no forwarding anywhere                  nginx origin 203.0.113.10
#                                                                          "attacker" 203.0.113.66
#
# Only documentation ranges, only inside namespaces this file creates; nothing is added
# to the root namespace but /etc/netns/${P}-*/resolv.conf (what `ip netns exec` mounts),
# and world_down removes all of it. Processes are stopped by the PIDs recorded here.
#
# Use: source this file, set WORLD_RECORDS (lines "NAME IP" for an A record, or
# "NAME TYPE DATA..." for any other) and WORLD_CERT_NAMES (and WORLD_NGINX_SERVERS: more
# nginx server blocks, e.g. by server_name on $ORIGIN_IP), then
#   world_up            # namespaces, certificates, unbound, nginx
#   world_start_airlock [airlock daemon args...]
#   world_await_airlock PID   # an airlock started another way: tracked, ready awaited
#   world_sbx CMD...    # run CMD in the sandbox
#   world_down          # (also installed as an EXIT trap by world_up)

set -euo pipefail

: "${AIRLOCK:?set AIRLOCK to the airlock binary}"
# Without root or a peer tool the test cannot run: exit 77, which ctest reports as
# skipped (never as passed).
if [[ $(id -u) -ne 0 ]]; then echo "needs root (network namespaces)"; exit 77; fi
# Under sudo, airlock run would run CMD as the sudo caller; the tests mean root unless they
# say otherwise (tests/e2e/unprivileged_run_test.sh sets these itself).
unset SUDO_UID SUDO_GID SUDO_USER SUDO_COMMAND
for tool in unbound nginx curl dig nft ip openssl python3; do
  command -v "$tool" >/dev/null || { echo "missing $tool: run deploy/install-deps.sh"; exit 77; }
done
# A prefix no namespace has yet: tests run two at a time, and one killed mid-run (a ctest
# timeout) may have left its namespaces behind. 24 random bits, retried while taken.
if [[ -z ${P:-} ]]; then
  for _ in $(seq 20); do
    P=al$(printf '%06x' $((SRANDOM % 16777216)))
    ip netns list 2>/dev/null | grep -q "^$P-" || break
  done
fi
W=${W:-$(mktemp -d /tmp/airlock-e2e.XXXXXX)}
SBX=$P-sbx GW=$P-gw NET=$P-net
SBX_IP=198.51.100.2 GW_SBX_IP=198.51.100.1 GW_NET_IP=203.0.113.1
DNS_IP=203.0.113.53 ORIGIN_IP=203.0.113.10 ATTACKER_IP=203.0.113.66
# WORLD_IPV6=1 gives the sandbox, the gateway and the "internet" IPv6 as well, from the
# documentation prefix 2001:db8::/32, only inside these namespaces.
WORLD_IPV6=${WORLD_IPV6:-}
SBX_IP6=2001:db8:51::2 GW_SBX_IP6=2001:db8:51::1 GW_NET_IP6=2001:db8:113::1
ORIGIN_IP6=2001:db8:113::10 ATTACKER_IP6=2001:db8:113::66
WORLD_RECORDS=${WORLD_RECORDS:-}
WORLD_CERT_NAMES=${WORLD_CERT_NAMES:-}
WORLD_PIDS=()
# More namespaces a test made (a second sandbox): removed with the world's own.
WORLD_EXTRA_NS=()
# Daemons stopped mid-test (world_stop_airlock) that did not exit 0: each fails the test.
WORLD_BAD_STOPS=0
AIRLOCK_PID=

world_log() { printf '[world] %s\n' "$*" >&2; }

world_down() {
  local pid daemon=""
  # The daemon the test still has (one it killed itself has left WORLD_PIDS, or was waited for).
  for pid in "${WORLD_PIDS[@]}"; do [[ $pid != "${AIRLOCK_PID:-}" ]] || daemon=$pid; done
  for pid in "${WORLD_PIDS[@]}"; do
    kill "$pid" 2>/dev/null || true
  done
  for pid in "${WORLD_PIDS[@]}"; do
    # Bounded wait, then insist: a test must never leave a server behind.
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
  done
  WORLD_PIDS=()
  # SIGTERM asks airlock to finish its lines and exit 0; anything else (a crash, a sanitizer's
  # exit code, the SIGKILL above after 5 s) fails the test. 127: not this shell's child.
  local daemon_status=0
  if [[ -n $daemon ]]; then
    wait "$daemon" 2>/dev/null || daemon_status=$?
    [[ $daemon_status == 127 ]] && daemon_status=0
  fi
  for ns in "$SBX" "$GW" "$NET" "${WORLD_EXTRA_NS[@]}"; do
    ip netns del "$ns" 2>/dev/null || true
    rm -rf "/etc/netns/$ns"
  done
  # Read once airlock has exited: LeakSanitizer reports at exit.
  local spoke=0
  world_sanitizers || spoke=1
  if [[ -z ${KEEP_WORLD:-} ]]; then rm -rf "$W"; else world_log "kept $W"; fi
  if [[ $spoke == 1 ]]; then
    echo "FAIL a sanitizer reported (above): the test fails whatever its checks said"
    exit 1
  fi
  if [[ $daemon_status != 0 ]]; then
    echo "FAIL airlock exited with status $daemon_status after SIGTERM, not 0"
    exit 1
  fi
  if [[ $WORLD_BAD_STOPS != 0 ]]; then
    echo "FAIL $WORLD_BAD_STOPS daemon(s) stopped mid-test did not exit 0 (above)"
    exit 1
  fi
}

# Stops the daemon of world_start_airlock / world_await_airlock with SIGTERM and waits for
# it (bounded: SIGKILL after 10 s), for a test that restarts it. Like the last daemon's at
# world_down, an exit status other than 0 fails the test.
world_stop_airlock() {
  local pid=$AIRLOCK_PID status=0 kept=() p
  [[ -n $pid ]] || return 0
  kill "$pid" 2>/dev/null || true
  for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -9 "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || status=$?
  [[ $status == 127 ]] && status=0  # not this shell's child: its status is not ours to read
  for p in "${WORLD_PIDS[@]}"; do [[ $p == "$pid" ]] || kept+=("$p"); done
  WORLD_PIDS=("${kept[@]}")
  AIRLOCK_PID=
  if [[ $status != 0 ]]; then
    echo "FAIL airlock (pid $pid) exited with status $status after SIGTERM, not 0"
    WORLD_BAD_STOPS=$((WORLD_BAD_STOPS + 1))
  fi
}

# Every file of the world that holds airlock's stderr (the daemons' *.stderr, the tests' own
# captures of airlock run in *.err): a report of ASan, LeakSanitizer, UBSan or TSan fails the
# test, which would otherwise pass with a daemon that read freed memory on the way.
world_sanitizers() {
  local f found=0
  local pattern='ERROR: (AddressSanitizer|LeakSanitizer)|runtime error: |WARNING: ThreadSanitizer'
  for f in "$W"/*.stderr "$W"/*.err "$W"/*/*.stderr; do
    [[ -f $f ]] || continue
    if grep -q -E "$pattern" "$f"; then
      world_log "sanitizer report in ${f#"$W"/}:"
      grep -E -A12 "$pattern" "$f" | head -40 | sed 's/^/     /' >&2
      found=1
    fi
  done
  return "$found"
}

world_certs() {
  local san="" n
  for n in $WORLD_CERT_NAMES; do san+="${san:+,}DNS:$n"; done
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj "/CN=airlock e2e test CA" \
    -keyout "$W/ca.key" -out "$W/ca.crt" 2>/dev/null
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=origin" \
    -keyout "$W/origin.key" -out "$W/origin.csr" 2>/dev/null
  printf 'subjectAltName=%s\n' "$san" >"$W/origin.ext"
  openssl x509 -req -in "$W/origin.csr" -CA "$W/ca.crt" -CAkey "$W/ca.key" -CAcreateserial -days 2 \
    -extfile "$W/origin.ext" -out "$W/origin.crt" 2>/dev/null
}

# unbound serves each zone (the last two labels of a record's name) from a zone file,
# authoritatively: CNAME chains inside a zone come back whole, and negative answers carry
# the zone's SOA, as from a real authoritative server.
world_unbound() {
  mkdir -p "$W/zones"
  local name rest zone tld
  declare -A zones=() tlds=()
  while read -r name rest; do
    [[ -n $name ]] || continue
    zone=$(awk -F. '{print $(NF-1) "." $NF}' <<<"$name")
    if [[ -z ${zones[$zone]:-} ]]; then
      zones[$zone]=1
      tlds[${zone#*.}]=1
      printf '$ORIGIN %s.\n$TTL 60\n@ IN SOA ns.%s. hostmaster.%s. 1 3600 600 86400 30\n@ IN NS ns.%s.\nns IN A %s\n' \
        "$zone" "$zone" "$zone" "$zone" "$DNS_IP" >"$W/zones/$zone.zone"
    fi
    [[ $rest == *' '* ]] || rest="A $rest"
    printf '%s. IN %s\n' "$name" "$rest" >>"$W/zones/$zone.zone"
  done <<<"$WORLD_RECORDS"
  {
    printf 'server:\n  interface: %s\n  port: 53\n  access-control: 0.0.0.0/0 allow\n' "$DNS_IP"
    printf '  do-daemonize: no\n  username: ""\n  chroot: ""\n  directory: "%s"\n  pidfile: ""\n' "$W"
    printf '  use-syslog: no\n  logfile: "%s/unbound.log"\n  log-queries: yes\n  verbosity: 1\n' "$W"
    printf '  do-ip6: no\n  module-config: "iterator"\n'
    # unbound answers special-use names like test. itself unless told not to
    for tld in "${!tlds[@]}"; do printf '  local-zone: "%s." nodefault\n' "$tld"; done
    for zone in "${!zones[@]}"; do
      printf 'auth-zone:\n  name: "%s."\n  zonefile: "%s/zones/%s.zone"\n  for-downstream: yes\n  for-upstream: no\n' \
        "$zone" "$W" "$zone"
    done
    printf 'remote-control:\n  control-enable: no\n'
  } >"$W/unbound.conf"
  ip netns exec "$NET" unbound -d -c "$W/unbound.conf" 2>>"$W/unbound.stderr" &
  WORLD_PIDS+=($!)
}

world_nginx() {
  mkdir -p "$W/nginx"
  cat >"$W/nginx.conf" <<CONF
worker_processes 1;
daemon off;
user root;
pid $W/nginx.pid;
error_log $W/nginx-error.log;
events { worker_connections 256; }
http {
  client_body_temp_path $W/nginx/body;
  proxy_temp_path $W/nginx/proxy;
  fastcgi_temp_path $W/nginx/fastcgi;
  uwsgi_temp_path $W/nginx/uwsgi;
  scgi_temp_path $W/nginx/scgi;
  default_type text/plain;
  ssl_certificate $W/origin.crt;
  ssl_certificate_key $W/origin.key;
  server {
    listen $ORIGIN_IP:80;
    listen $ORIGIN_IP:443 ssl;
${WORLD_IPV6:+    listen [$ORIGIN_IP6]:80;
    listen [$ORIGIN_IP6]:443 ssl;}
    access_log $W/origin-access.log;
    location / { return 200 "origin says hello to \$host\n"; }
    location = /big.bin { alias $W/big.bin; }
    # Reads a whole request body (proxy_pass buffers it before connecting) and answers 502:
    # a sink for uploads, where "return" would answer without reading.
    location = /sink { client_max_body_size 10m; proxy_pass http://127.0.0.1:9; }
  }
  server {
    listen $ATTACKER_IP:80;
    listen $ATTACKER_IP:443 ssl;
${WORLD_IPV6:+    listen [$ATTACKER_IP6]:80;
    listen [$ATTACKER_IP6]:443 ssl;}
    access_log $W/attacker-access.log;
    location / { return 200 "attacker got it\n"; }
  }
${WORLD_NGINX_SERVERS:-}
}
CONF
  head -c 5000000 /dev/urandom >"$W/big.bin"  # for relay integrity checks
  : >"$W/origin-access.log"
  : >"$W/attacker-access.log"
  ip netns exec "$NET" nginx -e "$W/nginx-error.log" -c "$W/nginx.conf" &
  WORLD_PIDS+=($!)
}

# A server-speaks-second TCP service (like sshd) on ADDR:PORT in the "internet": reads the
# client's first line, answers with a banner, closes (with `reset` as a third argument: a
# RST instead of a FIN, as a server that crashes). Stops by itself after 120 s.
world_tcp_banner() {
  local addr=$1 port=$2 ending=${3:-close}
  ip netns exec "$NET" timeout 120 python3 -c '
import socket, struct, sys
s = socket.socket(socket.AF_INET6 if ":" in sys.argv[1] else socket.AF_INET)
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], int(sys.argv[2]))); s.listen(16)
while True:
    c, _ = s.accept(); c.settimeout(5)
    try:
        c.recv(256); c.sendall(b"SSH-2.0-airlock-e2e\r\n")
        if sys.argv[3] == "reset":
            c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    except OSError:
        pass
    c.close()
' "$addr" "$port" "$ending" &
  WORLD_PIDS+=($!)
  world_wait_listen "$NET" t "$port"
}

# world_tcp_probe ADDR PORT: from the sandbox, sends an ssh-like client banner and prints the
# server's (what world_tcp_banner answers).
world_tcp_probe() {
  world_sbx timeout 10 python3 -c '
import socket, sys
c = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=5)
c.sendall(b"SSH-2.0-sandbox\r\n"); print(c.recv(256).decode().strip())' "$1" "$2"
}

# world_tcp_ending ADDR PORT: from the sandbox, sends a client banner, reads to the end and
# prints how the connection ended: `eof` (a FIN) or `reset` (a RST).
world_tcp_ending() {
  world_sbx timeout 10 python3 -c '
import socket, sys
c = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=5)
c.sendall(b"SSH-2.0-sandbox\r\n")
try:
    while c.recv(256):
        pass
    print("eof")
except ConnectionResetError:
    print("reset")' "$1" "$2"
}

# Waits (bounded) until something listens on PROTO ADDR:PORT inside namespace NS.
world_wait_listen() {
  local ns=$1 proto=$2 port=$3
  for _ in $(seq 100); do
    if ip netns exec "$ns" ss -lnH "-$proto" "sport = :$port" | grep -q .; then return 0; fi
    sleep 0.05
  done
  world_log "nothing listens on $proto port $port in $ns"
  return 1
}

world_up() {
  trap world_down EXIT
  trap 'exit 130' INT TERM
  world_log "namespaces $SBX, $GW, $NET; work dir $W"
  for ns in "$SBX" "$GW" "$NET"; do
    ip netns add "$ns"
    ip -n "$ns" link set lo up
  done
  ip link add "$P-s0" netns "$SBX" type veth peer name "$P-g0" netns "$GW"
  ip link add "$P-g1" netns "$GW" type veth peer name "$P-n0" netns "$NET"
  if [[ -n $WORLD_IPV6 ]]; then
    # IPv6 everywhere, redirected by the same inet table: the sandbox may use it, and it
    # goes through airlock exactly like IPv4.
    ip -n "$SBX" addr add "$SBX_IP6/64" dev "$P-s0" nodad
    ip -n "$GW" addr add "$GW_SBX_IP6/64" dev "$P-g0" nodad
    ip -n "$GW" addr add "$GW_NET_IP6/64" dev "$P-g1" nodad
    for a in "$ORIGIN_IP6" "$ATTACKER_IP6"; do ip -n "$NET" addr add "$a/64" dev "$P-n0" nodad; done
    ip netns exec "$GW" sysctl -qw net.ipv6.conf.all.forwarding=0
  else
    # The sandbox gets IPv4 only: IPv6 is off there, so it can never bypass the IPv4 rules.
    ip netns exec "$SBX" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
  fi
  ip -n "$SBX" addr add "$SBX_IP/24" dev "$P-s0"
  ip -n "$SBX" link set "$P-s0" up
  ip -n "$SBX" route add default via "$GW_SBX_IP"
  [[ -z $WORLD_IPV6 ]] || ip -n "$SBX" -6 route add default via "$GW_SBX_IP6" dev "$P-s0"
  ip -n "$GW" addr add "$GW_SBX_IP/24" dev "$P-g0"
  ip -n "$GW" addr add "$GW_NET_IP/24" dev "$P-g1"
  ip -n "$GW" link set "$P-g0" up
  ip -n "$GW" link set "$P-g1" up
  ip netns exec "$GW" sysctl -qw net.ipv4.ip_forward=0
  for a in "$DNS_IP" "$ORIGIN_IP" "$ATTACKER_IP"; do ip -n "$NET" addr add "$a/24" dev "$P-n0"; done
  ip -n "$NET" link set "$P-n0" up
  mkdir -p "/etc/netns/$SBX" "/etc/netns/$GW"
  echo "nameserver $GW_SBX_IP" >"/etc/netns/$SBX/resolv.conf"
  echo "nameserver $DNS_IP" >"/etc/netns/$GW/resolv.conf"
  "$AIRLOCK" nft-rules --iface "$P-g0" | ip netns exec "$GW" nft -f -
  world_certs
  world_unbound
  world_nginx
  world_wait_listen "$NET" u 53
  world_wait_listen "$NET" t 443
}

# Writes $W/airlock.yaml: airlock's listeners in the gateway, unbound as upstream, the
# log in $W, and one policy "sandbox" for the sandbox's /24 (session id $1) whose allow
# list is read from stdin (rule lines indented by six spaces). The first rule is on line 11.
world_airlock_config() {
  {
    printf 'version: 1\nlisten:\n  proxy: 0.0.0.0:15001\n  dns: 0.0.0.0:15053\nupstream_dns: [%s]\n' "$DNS_IP"
    printf 'log:\n  decisions: %s/decisions.jsonl\npolicies:\n  sandbox:\n    allow:\n' "$W"
    cat
    printf 'sessions:\n  - id: %s\n    source: 198.51.100.0/24\n    policy: sandbox\n' "$1"
  } >"$W/airlock.yaml"
}

# Starts airlock in the gateway namespace; its stderr goes to $W/airlock.stderr.
world_start_airlock() {
  : >"$W/airlock.stderr"  # a restart must not find the previous run's "ready"
  ip netns exec "$GW" "$AIRLOCK" daemon "$@" 2>"$W/airlock.stderr" &
  world_await_airlock $!
}

# Keeps PID as airlock's (stopped with the world) and waits for its ready line in
# $W/airlock.stderr, which the caller emptied before starting it.
world_await_airlock() {
  AIRLOCK_PID=$1
  WORLD_PIDS+=("$AIRLOCK_PID")
  for _ in $(seq 200); do
    grep -q 'airlock: ready' "$W/airlock.stderr" 2>/dev/null && return 0
    kill -0 "$AIRLOCK_PID" 2>/dev/null || break
    sleep 0.05
  done
  world_log "airlock did not start:"
  cat "$W/airlock.stderr" >&2
  return 1
}

world_sbx() { ip netns exec "$SBX" "$@"; }
# curl in the sandbox, trusting the test CA, bounded in time.
sbx_curl() { world_sbx curl -sS --max-time 10 --cacert "$W/ca.crt" "$@"; }
