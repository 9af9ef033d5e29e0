#!/usr/bin/env bash
# Slow, idle and vanishing peers (ROBUSTNESS D2, D3, D4). A slowloris on the peek phase,
# 2000 connections each trickling a byte every half second, is cut at the absolute peek
# deadline (a byte does not push it back) and logged, while a fresh client is served.
# Half-close is carried both ways with what follows it; a peer that vanishes is reaped by
# the idle timeout and its descriptors are released; 3000 idle tunnels are all closed at
# the idle timeout, each with its line; airlock's memory under each load stays within bounds
# (about twice what was measured). Timeouts are shortened by config.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
WORLD_RECORDS="listed.airlock.test 203.0.113.10
tcp.airlock.test 203.0.113.10"
WORLD_CERT_NAMES="listed.airlock.test"
source "$here/lib/world.sh"
source "$here/lib/check.sh"
world_up

PEEK=2 IDLE=3 CLIENTS=2000 TUNNELS=3000
# Memory bounds, each about twice the worst measured in runs of the dev build (ASan+UBSan,
# the heaviest; 2026-12-06, nine runs, six for the RSS): RSS growth per trickling connection
# 6815..13651 bytes, per idle tunnel 2140..11268 (noisy: the tunnels reuse what the
# slowloris phase freed), RSS with the 3000 tunnels open 300332..321536 KiB (mostly ASan's
# own, so that bound catches the whole process doubling, the two above a connection's share
# doubling). Release builds use less.
MAX_BYTES_PER_CLIENT=27000 MAX_BYTES_PER_TUNNEL=22500 MAX_RSS_KIB_TUNNELS=640000
world_airlock_config slow-sandbox <<'EOF'
      - host: listed.airlock.test
      - host: tcp.airlock.test
        ports: [2230, 2231, 2233]
EOF
cat >>"$W/airlock.yaml" <<EOF
limits:
  pending_handshakes: 2500
  session_pending_handshakes: 0  # no per-session share: this one session is the whole load
timeouts:
  peek: ${PEEK}s
  idle: ${IDLE}s
EOF
world_start_airlock -c "$W/airlock.yaml"

# Port 2230: reads to the client's FIN, answers with the count, and closes. Port 2231:
# greets, half-closes at once, and writes what it then still received to $W/after-fin.
ip netns exec "$NET" timeout 120 python3 -c '
import socket, sys, threading
def serve(port, handle):
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((sys.argv[1], port)); s.listen(16)
    while True:
        c, _ = s.accept(); c.settimeout(30)
        threading.Thread(target=handle, args=(c,), daemon=True).start()
def read_all(c):
    n = 0
    while (b := c.recv(65536)):
        n += len(b)
    return n
def count(c):
    try:
        c.sendall(b"got %d bytes\n" % read_all(c))
    except OSError:
        pass
    c.close()
def greet_then_fin(c):
    try:
        c.sendall(b"hello\n"); c.shutdown(socket.SHUT_WR)
        n = read_all(c)
        open(sys.argv[2], "w").write(str(n))
    except OSError as e:
        open(sys.argv[2], "w").write(repr(e))
    c.close()
threading.Thread(target=serve, args=(2231, greet_then_fin), daemon=True).start()
serve(2230, count)' "$ORIGIN_IP" "$W/after-fin" &
WORLD_PIDS+=($!)
world_wait_listen "$NET" t 2230
world_wait_listen "$NET" t 2231
# Port 2233: holds whatever connects, reading and dropping what it sends, until its end.
ip netns exec "$NET" timeout 120 python3 -c '
import resource, selectors, socket, sys
resource.setrlimit(resource.RLIMIT_NOFILE, (8192, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], 2233)); s.listen(4096); s.setblocking(False)
sel = selectors.DefaultSelector(); sel.register(s, selectors.EVENT_READ)
while True:
    for key, _ in sel.select():
        if key.fileobj is s:
            try:
                c, _ = s.accept(); c.setblocking(False); sel.register(c, selectors.EVENT_READ)
            except BlockingIOError:
                pass
            continue
        try:
            data = key.fileobj.recv(4096)
        except OSError:
            data = b""
        if not data:
            sel.unregister(key.fileobj); key.fileobj.close()' "$ORIGIN_IP" &
WORLD_PIDS+=($!)
world_wait_listen "$NET" t 2233

fetch() { sbx_curl --resolve "listed.airlock.test:443:$ORIGIN_IP" https://listed.airlock.test/ "$@"; }
works() { body_is "origin says hello to listed.airlock.test" fetch; }
open_fds() { ls "/proc/$AIRLOCK_PID/fd" | wc -l; }
rss_kib() { awk '/^VmRSS:/ { print $2 }' "/proc/$AIRLOCK_PID/status"; }

# 1. Half-close (D3). The client's FIN reaches the origin, whose answer still comes back
#    and whose FIN then ends the client's read.
expect "the client half-closes after 100 000 bytes: the origin counts them all and its answer comes back" \
  body_is "got 100000 bytes" world_sbx timeout 10 python3 -c '
import socket
ip = socket.gethostbyname("tcp.airlock.test")  # through airlock DNS: binds the address
c = socket.create_connection((ip, 2230), timeout=5)
c.sendall(b"x" * 100000); c.shutdown(socket.SHUT_WR)
answer = b""
while (b := c.recv(4096)):
    answer += b
print(answer.decode().strip())'
expect "  its line: allowed, 100 000 bytes up" \
  line event=close dst=203.0.113.10:2230 verdict=allow bytes_up=100000
expect "the origin half-closes after its greeting: the client reads it and an end, and still sends" \
  body_is "hello|eof" world_sbx timeout 10 python3 -c '
import socket
ip = socket.gethostbyname("tcp.airlock.test")
c = socket.create_connection((ip, 2231), timeout=5)
greeting = b""
while (b := c.recv(4096)):
    greeting += b
c.sendall(b"y" * 50000); c.close()
print(greeting.decode().strip() + "|eof")'
for _ in $(seq 100); do [[ -s $W/after-fin ]] && break; sleep 0.05; done
expect "  and the origin receives all 50 000 bytes sent after its FIN" test "$(cat "$W/after-fin" 2>/dev/null)" = 50000

# 2. A vanished peer (D3): once the relay is up, the origin's packets are dropped (no FIN,
#    no RST). The client's next bytes leave airlock and nothing more moves: the idle
#    timeout closes both sides, logs it, and gives the descriptors back.
fds_before=$(open_fds)
world_sbx timeout 30 python3 -c '
import socket, sys, time
ip = socket.gethostbyname("tcp.airlock.test")
c = socket.create_connection((ip, 2230), timeout=30)
c.sendall(b"before\n")
open(sys.argv[1], "w").close()
t = time.monotonic()
while time.monotonic() - t < 2:  # until the origin has vanished
    time.sleep(0.05)
c.sendall(b"after\n")
t = time.monotonic()
try:
    while c.recv(4096):
        pass
    how = "eof"
except ConnectionResetError:
    how = "reset"
except socket.timeout:
    how = "still open"
open(sys.argv[2], "w").write("%s %.1f" % (how, time.monotonic() - t))' "$W/relayed" "$W/vanished" &
client=$!
for _ in $(seq 100); do [[ -e $W/relayed ]] && break; sleep 0.05; done
sleep 0.3
ip netns exec "$NET" nft -f - <<'EOF'
table inet vanish {
  chain in { type filter hook input priority 0; tcp dport 2230 drop; }
  chain out { type filter hook output priority 0; tcp sport 2230 drop; }
}
EOF
wait "$client" || true
read -r how took <"$W/vanished" || true
echo "vanished origin: the client saw '$how' after ${took:-?} s (idle timeout ${IDLE} s)"
expect "a connection whose origin vanished is closed at the client by the idle timeout" \
  test "$how" = eof -o "$how" = reset
expect "  its line says idle_timeout" line event=close dst=203.0.113.10:2230 verdict=allow 'notes~=idle_timeout'
for _ in $(seq 50); do (($(open_fds) <= fds_before)) && break; sleep 0.1; done
expect "  and airlock holds no more descriptors than before it ($fds_before)" test "$(open_fds)" -le "$fds_before"
ip netns exec "$NET" nft delete table inet vanish

# 3. Slowloris on the peek phase (D2): half TLS, half HTTP, each connection sends its first
#    byte at once and one more every half second, never a whole ClientHello or head.
rss_before=$(rss_kib)
rm -f "$W/trickling"
world_sbx timeout 60 python3 -c '
import json, resource, selectors, socket, sys, time
ip, n, every, total = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
resource.setrlimit(resource.RLIMIT_NOFILE, (n + 64, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
heads = {443: b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + b"\x00" * 64,
         80: b"GET / HTTP/1.1\r\nHost: listed.airlock.test\r\nX-Slow: " + b"a" * 64}
sel = selectors.DefaultSelector()
conns = []
for i in range(n):
    port = 443 if i % 2 == 0 else 80
    s = socket.create_connection((ip, port), timeout=5)
    s.setblocking(False)
    s.send(heads[port][:1])
    c = {"s": s, "port": port, "opened": time.monotonic(), "sent": 1, "closed": None}
    conns.append(c)
    sel.register(s, selectors.EVENT_READ, c)
open(sys.argv[5], "w").close()
start = time.monotonic()
next_byte = start + every
while time.monotonic() - start < total and any(c["closed"] is None for c in conns):
    for key, _ in sel.select(timeout=0.05):
        c = key.data
        try:
            if key.fileobj.recv(4096):
                continue  # the refusal (an alert or a response); its end follows
        except (ConnectionResetError, BlockingIOError):
            pass
        c["closed"] = time.monotonic() - c["opened"]
        sel.unregister(key.fileobj); key.fileobj.close()
    if time.monotonic() >= next_byte:
        next_byte += every
        for c in conns:
            if c["closed"] is None and c["sent"] < len(heads[c["port"]]):
                try:
                    c["s"].send(heads[c["port"]][c["sent"]:c["sent"] + 1]); c["sent"] += 1
                except OSError:
                    pass
closed = [c["closed"] for c in conns if c["closed"] is not None]
print(json.dumps({"clients": n, "closed": len(closed), "first": min(closed, default=None),
                  "last": max(closed, default=None), "most_bytes_sent": max(c["sent"] for c in conns)}))
' "$ORIGIN_IP" "$CLIENTS" 0.5 $((PEEK + 8)) "$W/trickling" >"$W/slowloris.json" &
slowloris=$!
for _ in $(seq 600); do [[ -e $W/trickling ]] && break; sleep 0.05; done
rss_during=$(rss_kib)
started=$(date +%s%N)
expect "while $CLIENTS connections trickle their first bytes, a fresh client is served" works
per_client=$(((rss_during - rss_before) * 1024 / CLIENTS))
echo "  (in $((($(date +%s%N) - started) / 1000000)) ms; airlock's RSS grew by $((rss_during - rss_before)) KiB" \
  "with them open, $per_client bytes each in this build; RSS $rss_before -> $rss_during KiB)"
expect "  airlock's memory per trickling connection stays under $MAX_BYTES_PER_CLIENT bytes ($per_client)" \
  test "$per_client" -le "$MAX_BYTES_PER_CLIENT"
wait "$slowloris" || true
cat "$W/slowloris.json"
expect "every trickling connection is closed" python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
sys.exit(0 if r["closed"] == r["clients"] else 1)' "$W/slowloris.json"
expect "  at the peek deadline (${PEEK} s) from its accept, not later for each byte it sent" python3 -c '
import json, sys
r, peek = json.load(open(sys.argv[1])), float(sys.argv[2])
sys.exit(0 if r["first"] >= peek - 0.2 and r["last"] <= peek + 4 and r["most_bytes_sent"] >= 4 else 1)' \
  "$W/slowloris.json" "$PEEK"
expect "  each logged once: deny, reason timeout" \
  line --count "$CLIENTS" --wait 10 event=connect verdict=deny reason=timeout

# 4. Idle tunnels (D4): each says one line and then nothing; the idle timeout closes every
#    one of them, on the loop's one watch (no timer each), and logs each.
rss_before=$(rss_kib)
rm -f "$W/holding"
world_sbx timeout 60 python3 -c '
import json, resource, selectors, socket, sys, time
n, wait = int(sys.argv[1]), float(sys.argv[2])
resource.setrlimit(resource.RLIMIT_NOFILE, (n + 64, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
ip = socket.gethostbyname("tcp.airlock.test")
sel, sent = selectors.DefaultSelector(), {}
for i in range(n):
    c = socket.create_connection((ip, 2233), timeout=5)
    c.sendall(b"hold\n"); c.setblocking(False)
    sent[c] = time.monotonic()
    sel.register(c, selectors.EVENT_READ)
open(sys.argv[3], "w").close()
closed = []
end = time.monotonic() + wait
while sent and time.monotonic() < end:
    for key, _ in sel.select(timeout=0.1):
        try:
            if key.fileobj.recv(4096):
                continue
        except (ConnectionResetError, BlockingIOError):
            pass
        closed.append(time.monotonic() - sent.pop(key.fileobj))
        sel.unregister(key.fileobj); key.fileobj.close()
print(json.dumps({"tunnels": n, "closed": len(closed), "first": min(closed, default=None),
                  "last": max(closed, default=None)}))' "$TUNNELS" $((IDLE + 15)) "$W/holding" >"$W/idle.json" &
idlers=$!
for _ in $(seq 1200); do [[ -e $W/holding ]] && break; sleep 0.05; done
rss_holding=$(rss_kib)
cpu_before=$(awk '{ print $14 + $15 }' "/proc/$AIRLOCK_PID/stat")
wait "$idlers" || true
cpu_after=$(awk '{ print $14 + $15 }' "/proc/$AIRLOCK_PID/stat")
cat "$W/idle.json"
per_tunnel=$(((rss_holding - rss_before) * 1024 / TUNNELS))
echo "  (airlock's RSS grew by $((rss_holding - rss_before)) KiB with $TUNNELS tunnels open," \
  "$per_tunnel bytes each in this build, to $rss_holding KiB; it used" \
  "$(((cpu_after - cpu_before) * 10)) ms of CPU from then until all had closed)"
expect "  airlock's memory per idle tunnel stays under $MAX_BYTES_PER_TUNNEL bytes ($per_tunnel)" \
  test "$per_tunnel" -le "$MAX_BYTES_PER_TUNNEL"
expect "  its RSS with $TUNNELS tunnels open stays under $MAX_RSS_KIB_TUNNELS KiB ($rss_holding)" \
  test "$rss_holding" -le "$MAX_RSS_KIB_TUNNELS"
expect "$TUNNELS idle tunnels are all closed" python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
sys.exit(0 if r["closed"] == r["tunnels"] else 1)' "$W/idle.json"
expect "  at the idle timeout (${IDLE} s) after their last byte" python3 -c '
import json, sys
r, idle = json.load(open(sys.argv[1])), float(sys.argv[2])
sys.exit(0 if r["first"] >= idle - 0.2 and r["last"] <= idle + 6 else 1)' "$W/idle.json" "$IDLE"
expect "  each with its line: allowed, 5 bytes up, idle_timeout" \
  line --count "$TUNNELS" --wait 10 event=close dst=203.0.113.10:2233 verdict=allow bytes_up=5 'notes~=idle_timeout'
expect "airlock serves as before" works
check_summary
