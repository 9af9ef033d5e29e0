#!/usr/bin/env bash
# The explicit listener, for clients that set HTTPS_PROXY/HTTP_PROXY instead of being
# redirected: CONNECT and absolute-form requests get the same decisions as the transparent
# path, airlock connects to its own resolution, and a denial is a 403 naming the reason.
# The gateway here redirects nothing: the sandbox may reach the proxy port and nothing else.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
WORLD_RECORDS="listed.airlock.test 203.0.113.10
unlisted.airlock.test 203.0.113.10
internal.airlock.test 10.0.0.5"
WORLD_CERT_NAMES="listed.airlock.test unlisted.airlock.test internal.airlock.test"
source "$here/lib/world.sh"
source "$here/lib/check.sh"
world_up

# Replace the transparent table: only the explicit listener's port is reachable.
ip netns exec "$GW" nft delete table inet "airlock_${P}_g0"
ip netns exec "$GW" nft -f - <<NFT
table inet explicit_only {
  chain input {
    type filter hook input priority filter; policy accept;
    iifname "$P-g0" tcp dport 3128 accept
    iifname "$P-g0" counter drop
  }
  chain forward {
    type filter hook forward priority filter; policy drop;
  }
}
NFT

world_airlock_config explicit-sandbox <<'YAML'
      - host: listed.airlock.test
      - host: internal.airlock.test
YAML
sed -i "s|^  proxy: 0.0.0.0:15001|  http_proxy: 0.0.0.0:3128\n  control: $W/control.sock|; /^  dns: /d" "$W/airlock.yaml"
world_start_airlock -c "$W/airlock.yaml"

proxy="http://$GW_SBX_IP:3128"
# curl resolves nothing itself through a proxy: the names go to airlock as written.
expect "HTTPS through CONNECT to an allowed name works" body_is "origin says hello to listed.airlock.test" \
  sbx_curl --proxy "$proxy" https://listed.airlock.test/
expect "  logged as an allowed connect to airlock's own resolution" \
  line event=connect proto=connect name=listed.airlock.test verdict=allow reason=host_allowed \
  dst=listed.airlock.test:443 upstream=203.0.113.10:443 "client~=$SBX_IP:"
expect "plain HTTP through an absolute-form request works" body_is "origin says hello to listed.airlock.test" \
  sbx_curl --proxy "$proxy" http://listed.airlock.test/
expect "  logged as http" line event=connect proto=http name=listed.airlock.test verdict=allow dst=listed.airlock.test:80

connect_status() { sbx_curl -s -o /dev/null --proxy "$proxy" -w '%{http_connect}' "$1" 2>/dev/null || true; }
expect "CONNECT to an unlisted name gets 403" test "$(connect_status https://unlisted.airlock.test/)" = 403
expect "  logged with the reason" line event=connect proto=connect name=unlisted.airlock.test verdict=deny \
  reason=host_not_allowed
expect "an absolute-form request for an unlisted name gets 403 with a JSON body naming the reason" \
  bash -c '[[ $(ip netns exec "$0" curl -sS --max-time 10 --proxy "$1" http://unlisted.airlock.test/) == *"\"reason\":\"host_not_allowed\""* ]]' \
  "$SBX" "$proxy"
expect "an allowed name that resolves to a private address gets 403 private_address" \
  test "$(connect_status https://internal.airlock.test/)" = 403
expect "  logged as private_address" line event=connect name=internal.airlock.test reason=private_address
expect "CONNECT to a bare address without a cidr rule gets 403" test "$(connect_status https://203.0.113.10/)" = 403
expect "  logged as no_name" line event=connect proto=connect name=203.0.113.10 verdict=deny reason=no_name
expect "a request that is not a proxy request gets 403 parse_error" \
  bash -c '[[ $(printf "GET / HTTP/1.1\r\nHost: listed.airlock.test\r\n\r\n" | ip netns exec "$0" timeout 5 python3 -c "
import socket, sys
s = socket.create_connection((sys.argv[1], 3128), timeout=5)
s.sendall(sys.stdin.buffer.read())
print(s.recv(4096).decode(errors=\"replace\").splitlines()[0])" "$1") == "HTTP/1.1 403 Forbidden" ]]' "$SBX" "$GW_SBX_IP"
expect "  logged as parse_error, not_a_proxy_request" line event=connect reason=parse_error 'notes~=not_a_proxy_request'

# A session whose network namespace airlock knows: the line names the process behind the
# CONNECT. (The address that process dialled, airlock's own, is read only for such a session.)
expect "  lines of a session without a namespace name no process" \
  line event=connect session=explicit-sandbox name=listed.airlock.test process=null
out=$(ip netns exec "$GW" curl -sS --max-time 5 --unix-socket "$W/control.sock" -X POST \
  -H 'Content-Type: application/json' -w '\n%{http_code}\n' http://airlock/v1/sessions \
  -d '{"id":"rt-explicit","sources":["'"$SBX_IP"'/32"],"policy":"sandbox","netns":"/run/netns/'"$SBX"'"}')
expect "a session with a network namespace registers (201)" test "$(tail -1 <<<"$out")" = 201
expect "CONNECT from it works" body_is "origin says hello to listed.airlock.test" \
  sbx_curl --proxy "$proxy" https://listed.airlock.test/
# The lookup starts when the CONNECT is admitted and runs beside the tunnel; a client gone
# before it looks cannot be named (curl's tunnel above lasts 5 to 10 ms, and its line named
# curl in all but one of a day's runs). One that keeps its tunnel half a second always can.
expect "a client that holds its tunnel open gets 200" body_is "HTTP/1.1 200 Connection established" \
  world_sbx timeout 10 python3 -c '
import socket, sys, time
s = socket.create_connection((sys.argv[1], 3128), timeout=5)
s.sendall(b"CONNECT listed.airlock.test:443 HTTP/1.1\r\nHost: listed.airlock.test:443\r\n\r\n")
print(s.recv(1024).split(b"\r\n")[0].decode())
time.sleep(0.5)' "$GW_SBX_IP"
expect "  its line names the process (python3)" \
  line event=connect session=rt-explicit proto=connect verdict=allow 'process~="comm": "python3"'

expect "no request ever reached the attacker address" test ! -s "$W/attacker-access.log"
expect_not "other gateway ports stay closed to the sandbox" \
  world_sbx curl -sS --max-time 3 "http://$GW_SBX_IP:15001/"
check_summary
