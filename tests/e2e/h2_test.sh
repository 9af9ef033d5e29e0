#!/usr/bin/env bash
# HTTP/2 under inspection, with real clients (curl --http2, nghttp, Python's grpcio and h2)
# and nginx and a gRPC server as origins: h2 is spoken to the sandbox exactly when the origin
# speaks it (else http/1.1 both ways); each stream is judged as an HTTP/1.1 request (its
# :authority must be the SNI's host, else 421; :path and :method against the rule) and gets
# an http line with its stream id; bodies both ways arrive whole; a credential is injected
# per stream and its echo masked; a stream's redirect grants its target once; gRPC passes
# (and a method the rule does not list is refused); and rapid reset, CONTINUATION floods,
# SETTINGS floods and HPACK bombs are each stopped by their bound, the daemon serving on; a
# WebSocket over HTTP/2 (RFC 8441's extended CONNECT) where the origin takes it.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
PY=/usr/bin/python3  # Debian's, with python3-h2 and python3-grpcio
WORLD_RECORDS="h2.airlock.test 203.0.113.10
other.airlock.test 203.0.113.10
h1only.airlock.test 203.0.113.10
auth.airlock.test 203.0.113.10
landing.airlock.test 203.0.113.10
grpc.airlock.test 203.0.113.20
ws.airlock.test 203.0.113.30"
WORLD_CERT_NAMES="h2.airlock.test other.airlock.test h1only.airlock.test auth.airlock.test landing.airlock.test grpc.airlock.test ws.airlock.test"
W=${W:-$(mktemp -d /tmp/airlock-e2e.XXXXXX)}
ORIGIN=203.0.113.10
WORLD_NGINX_SERVERS="
  server {
    listen $ORIGIN:443 ssl http2;
    server_name h2.airlock.test other.airlock.test landing.airlock.test;
    access_log $W/h2-access.log;
    client_max_body_size 20m;
    location / { return 200 \"h2 origin: \$server_protocol \$host \$request_method \$request_uri\\n\"; }
    location = /big.bin { alias $W/big.bin; }
    location = /go { return 302 https://landing.airlock.test/landed; }
    location = /upload { proxy_pass http://127.0.0.1:9002; }
  }
  server {
    listen $ORIGIN:443 ssl http2;
    server_name auth.airlock.test;
    location / { return 200 \"you sent: \$http_authorization\\n\"; }
  }
  server {
    listen $ORIGIN:8443 ssl;
    server_name h1only.airlock.test;
    location / { return 200 \"h1 origin: \$server_protocol\\n\"; }
  }"
source "$here/lib/world.sh"
source "$here/lib/check.sh"
for m in h2 grpc; do "$PY" -c "import $m" 2>/dev/null || { echo "missing python3-$m: run deploy/install-deps.sh"; exit 77; }; done
command -v nghttp >/dev/null || { echo "missing nghttp (nghttp2-client): run deploy/install-deps.sh"; exit 77; }
world_up
ip -n "$NET" addr add 203.0.113.20/24 dev "$P-n0"
ip -n "$NET" addr add 203.0.113.30/24 dev "$P-n0"
# An origin that takes extended CONNECT (RFC 8441): WebSocket over HTTP/2.
ip netns exec "$NET" timeout 170 "$PY" "$here/lib/h2_origin.py" 203.0.113.30 "$W/origin.crt" "$W/origin.key" 165 \
  >"$W/h2-origin.log" 2>"$W/h2-origin.stderr" &
WORLD_PIDS+=($!)

# The upload sink: answers each POST with the sha256 of the body it read.
ip netns exec "$NET" timeout 170 "$PY" - <<'PY' 2>"$W/sink.stderr" &
import hashlib, http.server
class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        n = int(self.headers.get("Content-Length", 0))
        h = hashlib.sha256()
        while n > 0:
            chunk = self.rfile.read(min(n, 65536))
            h.update(chunk)
            n -= len(chunk)
        body = (h.hexdigest() + "\n").encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
http.server.HTTPServer(("127.0.0.1", 9002), H).serve_forever()
PY
WORLD_PIDS+=($!)
# A gRPC server (generic handlers: bytes in, bytes out), TLS with the origin's certificate.
ip netns exec "$NET" timeout 170 "$PY" - "$W" <<'PY' 2>"$W/grpc.stderr" &
import sys, time, grpc
from concurrent import futures
w = sys.argv[1]
def say(request, context):
    return b"echo:" + request
handler = grpc.method_handlers_generic_handler("echo.Echo", {
    "Say": grpc.unary_unary_rpc_method_handler(say),
    "Secret": grpc.unary_unary_rpc_method_handler(say)})
server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
server.add_generic_rpc_handlers((handler,))
creds = grpc.ssl_server_credentials([(open(f"{w}/origin.key", "rb").read(), open(f"{w}/origin.crt", "rb").read())])
server.add_secure_port("203.0.113.20:443", creds)
server.start()
time.sleep(165)
PY
WORLD_PIDS+=($!)
world_wait_listen "$NET" t 9002
for a in 203.0.113.20 203.0.113.30; do
  for _ in $(seq 100); do ip netns exec "$NET" ss -lntH "src $a:443" | grep -q . && break; sleep 0.05; done
done

"$AIRLOCK" ca init "$W/airlock-ca" >/dev/null
printf 'Bearer h2-secret-%s\n' "$RANDOM$RANDOM" >"$W/secret"
chmod 600 "$W/secret"
cat >"$W/airlock.yaml" <<YAML
version: 1
listen:
  proxy: 0.0.0.0:15001
  dns: 0.0.0.0:15053
upstream_dns: [$DNS_IP]
log:
  decisions: $W/decisions.jsonl
inspection:
  ca_dir: $W/airlock-ca
  upstream_ca: [$W/ca.crt]
policies:
  sandbox:
    allow:
      - host: h2.airlock.test
        inspect: true
        paths: [/ok, /big.bin, /upload, /go, /rr, /c, /bomb]
      - host: other.airlock.test
        inspect: true
      - host: h1only.airlock.test
        ports: [8443]
        inspect: true
      - host: auth.airlock.test
        inspect: true
      - host: ws.airlock.test
        inspect: true
        paths: [/chat]
      - host: grpc.airlock.test
        inspect: true
        paths: [/echo.Echo/Say]
        methods: [POST]
    redirects:
      - from: h2.airlock.test
        to: [landing.airlock.test]
    credentials:
      - host: auth.airlock.test
        header: Authorization
        secret_file: $W/secret
sessions:
  - id: h2-sandbox
    source: 198.51.100.0/24
    policy: sandbox
YAML
world_start_airlock -c "$W/airlock.yaml"
CA=$W/airlock-ca/ca.crt
h2curl() { world_sbx curl -sS --max-time 20 --cacert "$CA" --http2 "$@"; }
peer() { world_sbx timeout 20 "$PY" "$here/lib/h2_peer.py" "$CA" "$ORIGIN" "$@"; }

# --- h2 where the origin speaks it, http/1.1 where it does not --------------------------------
expect "curl --http2 through inspection speaks HTTP/2 to the sandbox and the origin" \
  body_is "h2 origin: HTTP/2.0 h2.airlock.test GET /ok
2" h2curl -w '%{http_version}\n' https://h2.airlock.test/ok
expect "  its connection's close says h2" line event=close name=h2.airlock.test 'notes~="h2"'
expect "  and the stream its http line, with its id" \
  line event=http name=h2.airlock.test method=GET path=/ok status=200 verdict=allow 'notes~=stream:1'
expect "an origin without h2: curl --http2 gets http/1.1 both ways" \
  body_is "h1 origin: HTTP/1.1
1.1" h2curl -w '%{http_version}\n' https://h1only.airlock.test:8443/
expect "nghttp (nghttp2's own client) is served over h2" \
  bash -c "ip netns exec '$SBX' timeout 10 nghttp https://h2.airlock.test/ok | grep -q 'h2 origin: HTTP/2.0'"
h2curl -o "$W/got.bin" https://h2.airlock.test/big.bin
expect "a 5 MB download over h2 arrives whole (flow control end to end)" cmp "$W/got.bin" "$W/big.bin"
head -c 3000000 /dev/urandom >"$W/up.bin"
want=$(sha256sum "$W/up.bin" | cut -d' ' -f1)
expect "a 3 MB upload over h2 reaches the origin whole" \
  body_is "$want" h2curl --data-binary @"$W/up.bin" https://h2.airlock.test/upload

# --- every stream judged on its own, on one connection ------------------------------------
peer h2.airlock.test streams h2.airlock.test:/ok h2.airlock.test:/forbidden other.airlock.test:/x \
  h2.airlock.test:/ok h2.airlock.test:/ok/fronted:other.airlock.test :/ok/by-host:H2.airlock.test \
  >"$W/streams.out" 2>&1 || true
cat "$W/streams.out"
expect "one connection: an allowed stream 200" grep -qx '/ok h2.airlock.test 200' "$W/streams.out"
expect "  a forbidden path beside it 403" grep -qx '/forbidden h2.airlock.test 403' "$W/streams.out"
expect "  a stream for another host 421 (never coalesced onto this connection)" \
  grep -qx '/x other.airlock.test 421' "$W/streams.out"
expect "  the forbidden stream's line: path_not_allowed, with its stream id" \
  line event=http name=h2.airlock.test path=/forbidden verdict=deny reason=path_not_allowed status=403 'notes~=stream:3'
expect "  the other host's: denied, 421" line event=http name=other.airlock.test path=/x verdict=deny status=421 \
  'notes~=stream:5'
expect "  a Host field naming another host than :authority: 400, the request malformed" \
  grep -qx '/ok/fronted h2.airlock.test@other.airlock.test 400' "$W/streams.out"
expect "  its line: parse_error, host_differs_from_authority" line event=http name=h2.airlock.test \
  path=/ok/fronted verdict=deny reason=parse_error status=400 'notes~=host_differs_from_authority'
expect "  a Host field instead of :authority names the stream's host (judged, allowed)" \
  grep -qx '/ok/by-host @H2.airlock.test 200' "$W/streams.out"
expect_not "  nothing of the refused streams reached the origin" grep -q 'forbidden\|/x \|fronted' "$W/h2-access.log"

# --- a credential per stream, its echo masked; a redirect's grant ------------------------------
h2curl https://auth.airlock.test/ >"$W/auth.out"
expect "a credential is injected on an h2 stream, and its echo masked" grep -qx 'you sent: \*\{10,\}' "$W/auth.out"
expect "  its line says so" line event=http name=auth.airlock.test 'notes~=credential_injected'
# The follow-up is let through by the grant, not inspected: the origin's own certificate.
cat "$CA" "$W/ca.crt" >"$W/both-cas.pem"
expect "a stream's redirect grants its target once" \
  body_is "h2 origin: HTTP/2.0 landing.airlock.test GET /landed" h2curl --cacert "$W/both-cas.pem" -L \
  https://h2.airlock.test/go
expect "  the follow-up: redirect_allowed" line event=connect name=landing.airlock.test reason=redirect_allowed

# --- gRPC -------------------------------------------------------------------------------------
grpc_call() {  # METHOD: a unary call with Python's grpcio, as a gRPC client in the sandbox makes it
  world_sbx timeout 20 "$PY" - "$CA" "$1" <<'PY'
import sys, grpc
ca, method = sys.argv[1], sys.argv[2]
channel = grpc.secure_channel("grpc.airlock.test:443", grpc.ssl_channel_credentials(open(ca, "rb").read()))
try:
    print(channel.unary_unary(f"/echo.Echo/{method}")(b"hello", timeout=10).decode())
except grpc.RpcError as e:
    print(f"rpc error {e.code().name}")
PY
}
expect "a gRPC call through inspection (grpcio, h2 both ways, trailers and all)" body_is "echo:hello" grpc_call Say
expect "  its line: POST /echo.Echo/Say, allowed" line event=http name=grpc.airlock.test method=POST \
  path=/echo.Echo/Say verdict=allow status=200
expect "a gRPC method the rule does not list is refused (PERMISSION_DENIED from the 403)" \
  body_is "rpc error PERMISSION_DENIED" grpc_call Secret
expect "  path_not_allowed" line event=http name=grpc.airlock.test path=/echo.Echo/Secret reason=path_not_allowed

# --- WebSocket over HTTP/2 (RFC 8441) -------------------------------------------------------
out=$(peer ws.airlock.test websocket /chat 2>&1 || true)
expect "extended CONNECT is offered where the origin offers it, and a WebSocket over h2 echoes ($out)" \
  test "$out" = "200 ping"
expect "  its line, written at the switch: CONNECT /chat, allowed, websocket" \
  line event=http name=ws.airlock.test method=CONNECT path=/chat verdict=allow status=200 'notes~=websocket'
out=$(peer ws.airlock.test websocket /elsewhere 2>&1 || true)
expect "  one to a path the rule does not allow is refused ($out)" test "$out" = "403"
expect "  path_not_allowed" \
  line event=http name=ws.airlock.test method=CONNECT path=/elsewhere verdict=deny reason=path_not_allowed status=403
expect "  the origin saw the allowed CONNECT and never the refused one" \
  bash -c "grep -qx 'CONNECT /chat' '$W/h2-origin.log' && ! grep -q /elsewhere '$W/h2-origin.log'"
out=$(peer h2.airlock.test websocket /ok 2>&1 || true)
expect "  an origin that does not take it (nginx): the sandbox is not offered it ($out)" test "$out" = "not offered"

# --- the attacks, each stopped by its bound --------------------------------------------------
before=$(wc -l <"$W/h2-access.log")
out=$(peer h2.airlock.test rapid_reset 2000 2>&1 || true)
echo "$out"
after=$(wc -l <"$W/h2-access.log")
expect "rapid reset: the connection is ended (GOAWAY) long before 2000 streams ($out)" \
  bash -c "[[ '$out' =~ goaway|closed ]] && ! [[ '$out' == 'sent 2000 open' ]]"
expect "  and the origin saw at most the reset allowance's worth of requests ($((after - before)))" \
  test $((after - before)) -le 200
out=$(peer h2.airlock.test continuation 1000 2>&1 || true)
expect "a CONTINUATION flood ends the connection ($out)" bash -c "[[ '$out' =~ goaway|closed ]]"
out=$(peer h2.airlock.test settings_flood 5000000 2>&1 || true)
expect "a SETTINGS flood that never reads its acks: the connection is ended under it ($out)" \
  bash -c "[[ '$out' == *closed ]]"
out=$(peer h2.airlock.test hpack_bomb 40 2>&1 || true)
expect "an HPACK bomb (a few KiB on the wire decoding into 120 KB) gets its stream reset ($out)" \
  bash -c "[[ '$out' =~ ^wire\ [0-9]{4}\ reset$ ]]"
expect "  its line: too_large, header_list_too_large" line event=http reason=too_large 'notes~=header_list_too_large'
expect "  the connection's close line names the flood nghttp2 found" \
  line event=close name=h2.airlock.test 'notes~=h2_client_error:'
expect "after all of them the daemon serves h2 as before" \
  body_is "h2 origin: HTTP/2.0 h2.airlock.test GET /ok" h2curl https://h2.airlock.test/ok
check_summary
