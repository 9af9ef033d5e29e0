#!/usr/bin/env bash
# The DNS -> connect race (ROBUSTNESS E8): airlock records which address it handed to which
# session before the answer leaves, so a client that connects the moment its answer
# arrives, with nothing but the address (opaque TCP, no name in its bytes), is judged by
# that answer, 20 times out of 20, each time to an address nothing had bound before.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
N=20
WORLD_RECORDS=""
for i in $(seq $N); do WORLD_RECORDS+="r$i.race.airlock.test 203.0.113.$((100 + i))"$'\n'; done
WORLD_CERT_NAMES="r1.race.airlock.test"  # (the origin needs a certificate; unused here)
source "$here/lib/world.sh"
source "$here/lib/check.sh"
world_up
world_airlock_config race-sandbox <<'YAML'
      - host: "*.race.airlock.test"
        ports: [2232]
YAML
world_start_airlock -c "$W/airlock.yaml"

# N origins, one address each, behind one listener that greets whoever connects.
for i in $(seq $N); do ip -n "$NET" addr add "203.0.113.$((100 + i))/24" dev "$P-n0"; done
ip netns exec "$NET" timeout 60 python3 -c '
import socket
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", 2232)); s.listen(64)
while True:
    c, _ = s.accept()
    try:
        c.settimeout(5); c.recv(64); c.sendall(b"greetings\n")
    except OSError:
        pass
    c.close()' &
WORLD_PIDS+=($!)
world_wait_listen "$NET" t 2232

expect_not "an address no answer gave out is refused (the control)" \
  world_sbx timeout 10 python3 -c '
import socket
c = socket.create_connection(("203.0.113.101", 2232), timeout=5)
c.sendall(b"hi\n")
try:
    data = c.recv(64)
except ConnectionResetError:
    data = b""
raise SystemExit(0 if data == b"greetings\n" else 1)'
: >"$W/decisions.jsonl"

# Each query on its own socket; the connect follows the answer's arrival with no pause.
world_sbx timeout 30 python3 -c '
import random, socket, struct, sys, time
gw, n = sys.argv[1], int(sys.argv[2])
greeted, gaps = 0, []
for i in range(1, n + 1):
    q = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); q.settimeout(3)
    qid = random.randrange(65536)
    name = b"".join(bytes([len(p)]) + p for p in (b"r%d.race.airlock.test" % i).split(b".")) + b"\0"
    q.sendto(struct.pack(">HHHHHH", qid, 0x0100, 1, 0, 0, 0) + name + struct.pack(">HH", 1, 1), (gw, 53))
    reply = q.recv(512)
    arrived = time.monotonic()
    address = socket.inet_ntoa(reply[-4:])  # the last answer record is the A record
    c = socket.create_connection((address, 2232), timeout=5)
    gaps.append((time.monotonic() - arrived) * 1000)
    c.sendall(b"hi\n")
    try:
        greeted += c.recv(64) == b"greetings\n"
    except ConnectionResetError:
        pass
    c.close(); q.close()
print(greeted, "%.2f" % max(gaps))' "$GW_SBX_IP" "$N" >"$W/race.out"
read -r greeted gap <"$W/race.out" || true
echo "connected at most ${gap:-?} ms after the answer arrived"
expect "$N connections made the moment their answers arrived all reach their origin" test "${greeted:-0}" -eq "$N"
expect "  each judged by its answer: allowed, named from it" \
  line --count "$N" event=connect verdict=allow reason=host_allowed 'notes~=name_from_dns_answer'
check_summary
