#!/usr/bin/env bash
# The explicit listener, for clients that set HTTPS_PROXY/HTTP_PROXY instead of being
# redirected: CONNECT and absolute-form requests get the same decisions as the transparent
# path, airlock connects to its own resolution, and a denial is a 403 naming the reason.
# A tunnel's first bytes are judged like a transparent connection's: TLS must name the
# CONNECT host (sni_connect_mismatch), and what the port does not carry is refused.
# The gateway here redirects nothing: the sandbox may reach the proxy port and nothing else.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
WORLD_RECORDS="listed.airlock.test 203.0.113.10
unlisted.airlock.test 203.0.113.10
internal.airlock.test 10.0.0.5
ssh.airlock.test 203.0.113.10"
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
      - host: ssh.airlock.test
        ports: [22]
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
out=$(world_sbx timeout 15 python3 "$here/lib/two_requests.py" "$GW_SBX_IP" 3128 listed.airlock.test \
  unlisted.airlock.test keepalive --proxy || true)
expect "a kept-alive absolute-form request for another host gets 403" grep -q '^2: HTTP/1.1 403' <<<"$out"
expect "  after the first was served" grep -q '^1: HTTP/1.1 200 OK | origin says hello to listed' <<<"$out"
expect "  refused on its own line" line event=http name=unlisted.airlock.test verdict=deny reason=misdirected \
  'notes~=host_changed'
out=$(world_sbx timeout 15 python3 "$here/lib/two_requests.py" "$GW_SBX_IP" 3128 listed.airlock.test \
  listed.airlock.test pipelined --proxy || true)
expect "two pipelined absolute-form requests for the same host are both served" \
  test "$(grep -c 'HTTP/1.1 200 OK | origin says hello to listed' <<<"$out")" -eq 2

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

# Inside a granted tunnel: judged like the transparent path.
tunnel() { world_sbx timeout 15 env CA_FILE="$W/ca.crt" python3 "$here/lib/speak.py" "$@" --proxy "$GW_SBX_IP:3128"; }
world_tcp_banner 203.0.113.10 22
origin_lines=$(wc -l <"$W/origin-access.log")
expect "TLS naming the CONNECT host works through the tunnel" body_is "tls-ok" tunnel listed.airlock.test 443 tls-sni listed.airlock.test
expect "  its line: allow, tunnel:tls" line event=connect proto=connect name=listed.airlock.test verdict=allow 'notes~=tunnel:tls'
expect "a tunnel whose TLS names another host is refused"   bash -c '[[ $0 == tls-refused* ]]' "$(tunnel listed.airlock.test 443 tls-sni unlisted.airlock.test)"
expect "  denied sni_connect_mismatch, naming the SNI" line event=connect proto=connect name=listed.airlock.test   verdict=deny reason=sni_connect_mismatch 'notes~=sni:unlisted.airlock.test'
expect "a tunnel to :443 carrying ssh-like bytes is refused"   bash -c '[[ $0 =~ ^(reset|closed)$ ]]' "$(tunnel listed.airlock.test 443 opaque)"
expect "  denied protocol_not_allowed, tunnel:tcp" line event=connect proto=connect name=listed.airlock.test   verdict=deny reason=protocol_not_allowed 'notes~=tunnel:tcp' 'notes~=spoke:opaque'
expect "a tunnel to :443 with a TLS hello naming nothing is refused"   bash -c '[[ $0 == tls-refused* ]]' "$(tunnel listed.airlock.test 443 tls-nosni)"
expect "  denied protocol_not_allowed, spoke:tls_without_sni" line event=connect proto=connect   name=listed.airlock.test verdict=deny reason=protocol_not_allowed 'notes~=spoke:tls_without_sni'
expect "a tunnel to :443 carrying plain HTTP gets 403" body_is "HTTP/1.1 403 Forbidden"   tunnel listed.airlock.test 443 http listed.airlock.test
expect "  denied protocol_not_allowed, spoke:http" line event=connect proto=connect name=listed.airlock.test   verdict=deny reason=protocol_not_allowed 'notes~=spoke:http'
expect "no refused tunnel reached the origin (a handshake alone logs no request)" test "$(wc -l <"$W/origin-access.log")" -eq "$origin_lines"
expect "ssh-like bytes through a tunnel to a port the rule lists work" body_is "SSH-2.0-airlock-e2e"   tunnel ssh.airlock.test 22 opaque
expect "  its line: allow, tunnel:tcp, airlock's own resolution" line event=connect proto=connect   name=ssh.airlock.test verdict=allow 'notes~=tunnel:tcp' upstream=203.0.113.10:22

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
import socket, ssl, sys, time
s = socket.create_connection((sys.argv[1], 3128), timeout=5)
s.sendall(b"CONNECT listed.airlock.test:443 HTTP/1.1\r\nHost: listed.airlock.test:443\r\n\r\n")
print(s.recv(1024).split(b"\r\n")[0].decode())
t = ssl.create_default_context(cafile=sys.argv[2]).wrap_socket(s, server_hostname="listed.airlock.test")
time.sleep(0.5)' "$GW_SBX_IP" "$W/ca.crt"
expect "  its line names the process (python3)" \
  line event=connect session=rt-explicit proto=connect verdict=allow 'process~="comm": "python3"'

expect "no request ever reached the attacker address" test ! -s "$W/attacker-access.log"
expect_not "other gateway ports stay closed to the sandbox" \
  world_sbx curl -sS --max-time 3 "http://$GW_SBX_IP:15001/"
check_summary
