#!/usr/bin/env bash
# WebSocket where airlock serves the exchange itself: on an inspected host (wss://, TLS
# terminated with airlock's CA) and on a plain-HTTP host it serves (ws://). The upgrade is
# judged as the GET it is (host, path, method); its http line is written at the switch,
# while the socket is open; then the frames pass both ways, counted into the connection's
# close line and against the session's byte budget, which cuts it when spent. An upgrade
# to a path the rule does not allow is 403; one on a host whose requests carry an injected
# credential is refused (its frames could not be masked); a plain host airlock only relays
# still refuses the switch (tests/e2e/plain_requests_test.sh). Real clients and servers:
# Python's websockets (Debian's python3-websockets) behind nginx.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
PY=/usr/bin/python3  # Debian's, with its python3-websockets (another python3 may come first on PATH)
WORLD_RECORDS="ws.airlock.test 203.0.113.10
plainws.airlock.test 203.0.113.10
authws.airlock.test 203.0.113.10"
WORLD_CERT_NAMES="ws.airlock.test plainws.airlock.test authws.airlock.test"
source "$here/lib/world.sh"
source "$here/lib/check.sh"
"$PY" -c 'import websockets' 2>/dev/null || { echo "missing python3-websockets: run deploy/install-deps.sh"; exit 77; }

WS_PROXY='proxy_pass http://127.0.0.1:9001; proxy_http_version 1.1;
      proxy_set_header Upgrade $http_upgrade; proxy_set_header Connection "upgrade"; proxy_read_timeout 60s;'
WORLD_NGINX_SERVERS="
  server {
    listen $ORIGIN_IP:443 ssl;
    server_name ws.airlock.test authws.airlock.test;
    location / { $WS_PROXY }
  }
  server {
    listen $ORIGIN_IP:80;
    server_name plainws.airlock.test;
    location / { $WS_PROXY }
  }"
world_up

# The origin's WebSocket server: echoes each message, bounded in life.
ip netns exec "$NET" timeout 170 "$PY" - <<'PY' 2>"$W/ws-server.stderr" &
import asyncio, websockets
async def echo(ws, path=None):
    async for message in ws:
        await ws.send(message)
async def main():
    async with websockets.serve(echo, "127.0.0.1", 9001, max_size=None):
        await asyncio.Future()
asyncio.run(main())
PY
WORLD_PIDS+=($!)
world_wait_listen "$NET" t 9001

"$AIRLOCK" ca init "$W/airlock-ca" >/dev/null
printf 'Bearer e2e-secret-%s\n' "$RANDOM$RANDOM" >"$W/secret"
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
limits:
  session_bytes_up: 3M
policies:
  sandbox:
    allow:
      - host: ws.airlock.test
        ports: [443]
        inspect: true
        paths: [/echo]
      - host: plainws.airlock.test
        ports: [80]
        inspect: true
      - host: authws.airlock.test
        ports: [443]
        inspect: true
    credentials:
      - host: authws.airlock.test
        header: Authorization
        secret_file: $W/secret
sessions:
  - id: ws-sandbox
    source: 198.51.100.0/24
    policy: sandbox
YAML
world_start_airlock -c "$W/airlock.yaml"

# client URL [hold SECONDS] [send BYTES]: a WebSocket client in the sandbox that trusts
# airlock's CA; prints "echo:<first message back>" and what ended it.
client() {
  world_sbx timeout 30 "$PY" - "$W/airlock-ca/ca.crt" "$@" <<'PY'
import asyncio, os, ssl, sys, websockets
ca, url = sys.argv[1], sys.argv[2]
hold = float(sys.argv[4]) if len(sys.argv) > 4 and sys.argv[3] == "hold" else 0
send = int(sys.argv[4]) if len(sys.argv) > 4 and sys.argv[3] == "send" else 0
async def main():
    ctx = ssl.create_default_context(cafile=ca) if url.startswith("wss:") else None
    try:
        async with websockets.connect(url, ssl=ctx, max_size=None, open_timeout=10) as ws:
            await ws.send("ping")
            print("echo:" + await ws.recv(), flush=True)
            await asyncio.sleep(hold)
            sent = 0
            while sent < send:
                await ws.send(os.urandom(65536))  # not compressible (permessage-deflate)
                await ws.recv()
                sent += 65536
            print(f"sent:{sent}", flush=True)
    except websockets.exceptions.InvalidStatusCode as e:
        print(f"refused:{e.status_code}")
    except (websockets.exceptions.ConnectionClosed, OSError) as e:
        print(f"ended:{type(e).__name__}")
asyncio.run(main())
PY
}

# --- an inspected host, wss:// -----------------------------------------------------------
client wss://ws.airlock.test/echo hold 3 >"$W/held.out" &
held=$!
expect "the upgrade's http line is written at the switch, while the socket is open" \
  line event=http name=ws.airlock.test method=GET path=/echo verdict=allow status=101 'notes~=websocket' \
  'notes~=upgraded'
expect "  (the client still holds it open)" kill -0 "$held"
wait "$held" || true
expect "wss:// through inspection: the message comes back" grep -qx 'echo:ping' "$W/held.out"
expect "  the connection's close line has the frames' bytes" \
  python3 -c '
import json, sys
closes = [json.loads(l) for l in open(sys.argv[1]) if "\"event\":\"close\"" in l and "ws.airlock.test" in l]
print([(c["bytes_up"], c["bytes_down"]) for c in closes])
sys.exit(0 if closes and closes[0]["bytes_up"] > 0 and closes[0]["bytes_down"] > 0 else 1)' "$W/decisions.jsonl"
expect "an upgrade to a path the rule does not allow is 403" \
  body_is refused:403 client wss://ws.airlock.test/other
expect "  its line: path_not_allowed" line event=http name=ws.airlock.test path=/other verdict=deny reason=path_not_allowed
expect "an upgrade on a host whose requests carry a credential is refused (403)" \
  body_is refused:403 client wss://authws.airlock.test/echo
expect "  its line says why" line event=http name=authws.airlock.test verdict=deny reason=protocol_not_allowed \
  'notes~=websocket_with_credential'

# --- a plain host airlock serves, ws:// ----------------------------------------------------
client ws://plainws.airlock.test/echo >"$W/plain.out" || true
expect "ws:// on a plain host airlock serves: the message comes back" grep -qx echo:ping "$W/plain.out"
expect "  its line: allowed, 101, websocket" line event=http name=plainws.airlock.test verdict=allow status=101 \
  'notes~=websocket'

# --- the session's byte budget counts the frames --------------------------------------------
client wss://ws.airlock.test/echo send 4000000 >"$W/budget.out" || true
cat "$W/budget.out"
expect "frames past the session's 3M upload budget: the socket is cut" grep -q '^ended:' "$W/budget.out"
expect "  its connection's close line: deny, limit_exceeded, session_bytes_up" \
  line event=close name=ws.airlock.test verdict=deny reason=limit_exceeded 'notes~=limit:session_bytes_up'
check_summary
