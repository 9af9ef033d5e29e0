#!/usr/bin/env bash
# airlock killed with SIGKILL and started again (ROBUSTNESS E5). While it is dead the
# gateway's nft rules still redirect everything to its ports, so the sandbox reaches
# nothing: not the origin by name, not by a hard-coded address, not another resolver. The
# name table is not kept across the restart: an address bound before it is refused
# until the sandbox asks again (the conservative rebuild). The outage is measured.
# Then a graceful stop under load (ROBUSTNESS E7): SIGTERM with 100 open tunnels and DNS
# queries arriving; every tunnel and every answered query has its line, and it exits 0.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
WORLD_RECORDS="listed.airlock.test 203.0.113.10
ssh.airlock.test 203.0.113.11"
WORLD_CERT_NAMES="listed.airlock.test"
source "$here/lib/world.sh"
source "$here/lib/check.sh"
world_up
world_airlock_config restart-sandbox <<'YAML'
      - host: listed.airlock.test
      - host: ssh.airlock.test
        ports: [22]
      - host: "*.wild.airlock.test"
YAML
world_start_airlock -c "$W/airlock.yaml"
SSH_IP=203.0.113.11  # an address of its own: no other name's answer binds it
ip -n "$NET" addr add "$SSH_IP/24" dev "$P-n0"
world_tcp_banner "$SSH_IP" 22

works() { body_is "origin says hello to listed.airlock.test" sbx_curl --max-time 3 https://listed.airlock.test/; }
ssh_like() { body_is "SSH-2.0-airlock-e2e" world_tcp_probe "$SSH_IP" 22; }
origin_requests() { wc -l <"$W/origin-access.log"; }

expect "before: the sandbox fetches by name" works
world_sbx dig +time=2 +tries=1 +short @"$GW_SBX_IP" ssh.airlock.test >/dev/null
expect "  and reaches an address its DNS answer gave, by address alone" ssh_like

kill -9 "$AIRLOCK_PID"
wait "$AIRLOCK_PID" 2>/dev/null || true
alive=()  # the killed pid leaves the list: world_down must not signal it once reused
for pid in "${WORLD_PIDS[@]}"; do [[ $pid == "$AIRLOCK_PID" ]] || alive+=("$pid"); done
WORLD_PIDS=("${alive[@]}")
killed_at=$(date +%s%N)
seen=$(origin_requests)
expect_not "while airlock is dead: no fetch by name" works
expect_not "  none by a hard-coded address" \
  sbx_curl --max-time 3 --resolve "listed.airlock.test:443:$ORIGIN_IP" https://listed.airlock.test/
expect_not "  no plain HTTP to the origin's address" sbx_curl --max-time 3 "http://$ORIGIN_IP/"
expect_not "  no DNS from another resolver" world_sbx dig +time=2 +tries=1 @"$DNS_IP" listed.airlock.test
expect "  and the origin saw nothing of it" test "$(origin_requests)" -eq "$seen"

restarted_at=$(date +%s%N)
world_start_airlock -c "$W/airlock.yaml"
for _ in $(seq 100); do works 2>/dev/null && break; sleep 0.02; done
now=$(date +%s%N)
echo "outage: $(((now - restarted_at) / 1000000)) ms from the restart to the first fetch served;" \
  "$(((now - killed_at) / 1000000)) ms from the SIGKILL, the checks while dead included"
expect "after the restart: the sandbox fetches by name again" works
expect_not "  an address bound before the restart is refused by address alone (the table starts empty)" ssh_like
expect "  logged as no_name" line event=connect dst="$SSH_IP:22" verdict=deny reason=no_name
world_sbx dig +time=2 +tries=1 +short @"$GW_SBX_IP" ssh.airlock.test >/dev/null
expect "  and reached again once the sandbox asks its DNS again" ssh_like

# SIGTERM under load (E7). 100 tunnels, HTTP and TLS alternately, each answered once and
# then held silent; and a stream of DNS queries, each for a name of its own under an
# allowed wildcard (so each goes upstream and its line can be told apart), that goes on
# across the signal. The tunnels are cut at the end of the drain time; the queries
# answered before the listeners closed are the ones that must have lines.
TUNNELS=100
rm -f "$W/holding"
world_sbx timeout 60 python3 -c '
import socket, ssl, sys, time
n, ctx = int(sys.argv[1]), ssl.create_default_context(cafile=sys.argv[2])
held = []
for i in range(n):
    c = socket.create_connection(("listed.airlock.test", 443 if i % 2 else 80), timeout=10)
    port = c.getsockname()[1]
    if i % 2:
        c = ctx.wrap_socket(c, server_hostname="listed.airlock.test")
    c.sendall(b"GET / HTTP/1.1\r\nHost: listed.airlock.test\r\n\r\n")
    if c.recv(4096):
        held.append(c)
        print(port, flush=True)
open(sys.argv[3], "w").close()
ended, end = 0, time.monotonic() + 30
for c in held:  # until airlock cuts them
    c.settimeout(max(0.1, end - time.monotonic()))
    try:
        while c.recv(4096):
            pass
        ended += 1
    except OSError as e:
        ended += not isinstance(e, socket.timeout)
print(ended, file=sys.stderr)' "$TUNNELS" "$W/ca.crt" "$W/holding" >"$W/held-ports" 2>"$W/held-ended" &
holder=$!
for _ in $(seq 600); do [[ -e $W/holding ]] && break; sleep 0.05; done
expect "$TUNNELS tunnels are open and answered" test "$(wc -l <"$W/held-ports")" -eq "$TUNNELS"
world_sbx timeout 20 python3 -c '
import socket, struct, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.setblocking(False)
asked, answered, signalled = {}, set(), False
end = time.monotonic() + 2.0
i = 0
while time.monotonic() < end + 1.0:  # one more second to collect late answers
    if time.monotonic() < end:
        i += 1
        name = "q%d.wild.airlock.test" % i
        txid = i  # one each (fewer than 65536 in 2 s): an answer names its query
        q = struct.pack(">HHHHHH", txid, 0x0100, 1, 0, 0, 0)
        q += b"".join(bytes([len(l)]) + l.encode() for l in name.split(".")) + b"\0" + struct.pack(">HH", 1, 1)
        asked[txid] = name
        s.sendto(q, (sys.argv[1], 53))
    try:
        while True:
            a = s.recv(4096)
            if len(a) >= 2 and struct.unpack(">H", a[:2])[0] in asked:
                answered.add(asked[struct.unpack(">H", a[:2])[0]])
    except BlockingIOError:
        pass
    if len(answered) >= 20 and not signalled:
        open(sys.argv[2], "w").close()
        signalled = True
    time.sleep(0.005)
for name in sorted(answered):
    print(name)
print("asked %d, answered %d" % (i, len(answered)), file=sys.stderr)' "$GW_SBX_IP" "$W/asking" >"$W/answered" 2>"$W/asked" &
asker=$!
for _ in $(seq 100); do [[ -e $W/asking ]] && break; sleep 0.05; done  # queries are being answered
t0=$(date +%s%N)
kill -TERM "$AIRLOCK_PID"
status=0
wait "$AIRLOCK_PID" || status=$?
took=$((($(date +%s%N) - t0) / 1000000))
wait "$asker" || true
wait "$holder" || true
cat "$W/asked"
expect "SIGTERM with $TUNNELS tunnels open and queries arriving: exit 0 after the drain time (took $took ms)" \
  test "$status" -eq 0 -a "$took" -ge 4500 -a "$took" -lt 10000
# lines_for FIELD PREFIX VALUES_FILE: the values (FIELD = PREFIX + value) with no decision line
lines_for() {
  python3 - "$W/decisions.jsonl" "$1" "$2" "$3" <<'PY'
import json, sys
log, field, prefix, wanted = sys.argv[1:]
have = {json.loads(l).get(field) for l in open(log, encoding="utf-8")}
missing = [w for w in open(wanted).read().split() if prefix + w not in have]
print(f"{len(missing)} without a line: {missing[:10]}")
sys.exit(1 if missing else 0)
PY
}
expect "  every tunnel was cut (the client saw $(cat "$W/held-ended") end)" test "$(cat "$W/held-ended")" -eq "$TUNNELS"
expect "  every tunnel it cut has its line" lines_for client "$SBX_IP:" "$W/held-ports"
expect "  every query answered has its line" lines_for name "" "$W/answered"
closed_with() {  # the session's close line, written last, counts at least the tunnels it cut
  python3 - "$W/decisions.jsonl" "$TUNNELS" <<'PY'
import json, sys
closes = [l for l in map(json.loads, open(sys.argv[1], encoding="utf-8")) if l.get("action") == "close"]
print(closes[-1:] or "no close line")
sys.exit(0 if closes and closes[-1]["connections_allowed"] >= int(sys.argv[2]) else 1)
PY
}
expect "  and the session's close line counts them" closed_with
read -r _ asked _ answered <"$W/asked"
expect "  (the signal came while queries were being sent: ${answered} of ${asked%,} answered)" \
  test "$answered" -ge 20 -a "$answered" -lt "${asked%,}"
check_summary
