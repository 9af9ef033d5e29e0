#!/usr/bin/env bash
# Every request of a plain-HTTP connection is judged, not only its first. Two names share
# the origin's address (a CDN's tenants); a kept-alive or pipelined second request that
# names the other one gets a 403 and its own line, and the connection ends: the origin
# never serves it. Bodies are framed (Content-Length, chunked), so a head inside a body is
# no request and a head after one is judged; a request framed ambiguously gets a 400. The same request alone, on a connection of its own, is judged by its
# own name. A request that would switch protocols (Upgrade) is refused where the port does
# not carry `any`, and relayed as such where it does.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
WORLD_RECORDS="tenant-a.airlock.test 203.0.113.10
tenant-b.airlock.test 203.0.113.10
ws.airlock.test 203.0.113.10"
WORLD_CERT_NAMES="tenant-a.airlock.test"
source "$here/lib/world.sh"
source "$here/lib/check.sh"
world_up
# A server that switches protocols: 101, then it echoes what it gets.
ip netns exec "$NET" timeout 100 python3 -c '
import socket
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("203.0.113.10", 8080)); s.listen(8)
while True:
    c, _ = s.accept(); c.settimeout(5)
    try:
        head = b""
        while b"\r\n\r\n" not in head:
            head += c.recv(1024)
        c.sendall(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
        while (data := c.recv(1024)):
            c.sendall(b"echo:" + data)
    except OSError:
        pass
    c.close()' &
WORLD_PIDS+=($!)
world_wait_listen "$NET" t 8080

world_airlock_config plain-requests <<'YAML'
      - host: tenant-a.airlock.test
      - host: ws.airlock.test
        ports: [80, {port: 8080, protocol: any}]
YAML
world_start_airlock -c "$W/airlock.yaml"

two() { world_sbx timeout 15 python3 "$here/lib/two_requests.py" "$@"; }

expect "one request for tenant-a is served" body_is "origin says hello to tenant-a.airlock.test" \
  sbx_curl http://tenant-a.airlock.test/
expect "tenant-b alone is denied" bash -c "ip netns exec $SBX curl -sS --max-time 10 -o /dev/null -w '%{http_code}' --resolve tenant-b.airlock.test:80:203.0.113.10 http://tenant-b.airlock.test/ | grep -qx 403"

for mode in keepalive pipelined; do
  out=$(two 203.0.113.10 80 tenant-a.airlock.test tenant-b.airlock.test $mode || true)
  expect "$mode: the first request (tenant-a) is answered" grep -q '^1: HTTP/1.1 200' <<<"$out"
  expect "$mode: the second (tenant-b, same connection) gets 403" grep -q '^2: HTTP/1.1 403' <<<"$out"
  expect "$mode:   the origin never answered for tenant-b" bash -c '! grep -q "hello to tenant-b" <<<"$0"' "$out"
done
out=$(two 203.0.113.10 80 tenant-a.airlock.test tenant-b.airlock.test chunked || true)
expect "chunked: a POST with a chunked body is answered" grep -q '^1: HTTP/1.1 200' <<<"$out"
expect "chunked:   the request for tenant-b after its body gets 403" grep -q '^2: HTTP/1.1 403' <<<"$out"
expect "  each refused with its own line: misdirected, host_changed" \
  line --count 3 event=http name=tenant-b.airlock.test verdict=deny reason=misdirected status=403 'notes~=host_changed'
out=$(two 203.0.113.10 80 tenant-a.airlock.test tenant-b.airlock.test in-body || true)
expect "in-body: a request for tenant-b inside a POST's body is only a body" grep -q '^1: HTTP/1.1 200' <<<"$out"
expect "in-body:   and the request for tenant-a after it is answered" grep -q '^2: HTTP/1.1 200 OK | origin says hello to tenant-a' <<<"$out"
expect "  no line judged that body as a request" line --count 3 event=http name=tenant-b.airlock.test
out=$(two 203.0.113.10 80 tenant-a.airlock.test tenant-b.airlock.test ambiguous || true)
expect "ambiguous: Content-Length with Transfer-Encoding gets 400, the origin never sees it" \
  grep -q '^1: HTTP/1.1 400' <<<"$out"
expect "  parse_error, ambiguous_framing" line event=http name=tenant-a.airlock.test verdict=deny reason=parse_error \
  status=400 'notes~=ambiguous_framing'
expect "two requests for the same host on one connection both pass" \
  bash -c "[[ \$(ip netns exec $SBX timeout 15 python3 $here/lib/two_requests.py 203.0.113.10 80 tenant-a.airlock.test tenant-a.airlock.test keepalive | grep -c ' 200 ') == 2 ]]"
expect "  the connection's line counts them (the allowed ones have no lines of their own)" \
  line event=close name=tenant-a.airlock.test verdict=allow 'notes~=requests:2'

# Upgrade: refused on :80 (http), passed on a port that carries any.
upgrade() {  # ADDR PORT HOST: the answer's status line, then what came back for "ping"
  world_sbx timeout 10 python3 "$here/lib/speak.py" "$1" "$2" upgrade "$3"
}
expect "an Upgrade on :80 gets 403" body_is "HTTP/1.1 403 Forbidden" upgrade 203.0.113.10 80 ws.airlock.test
expect "  denied protocol_not_allowed, upgrade:websocket" \
  line event=http name=ws.airlock.test verdict=deny reason=protocol_not_allowed 'notes~=upgrade:websocket'
expect "an Upgrade on a port that carries any is switched, and the bytes after it relayed" \
  body_is "HTTP/1.1 101 Switching Protocols
echo:ping" upgrade 203.0.113.10 8080 ws.airlock.test
expect "  logged as an allowed request, upgraded" line event=http name=ws.airlock.test \
  verdict=allow dst=203.0.113.10:8080 status=101 'notes~=upgraded'

world_stop_airlock
check_summary
