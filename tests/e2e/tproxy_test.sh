#!/usr/bin/env bash
# The same gateway with TCP diverted by nft TPROXY instead of REDIRECT (airlock nft-rules
# --tproxy, listen.tproxy): no NAT, the accepted socket keeps the address the client
# meant. Allowed and denied HTTPS and HTTP, SNI spoofing, a bare address without SNI,
# opaque TCP named from a DNS answer; and airlock on two event loops sharing the port
# refuses a second daemon that tries to join it.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)

WORLD_RECORDS="allowed.airlock.test 203.0.113.10
denied.airlock.test 203.0.113.66
ssh.airlock.test 203.0.113.10"
WORLD_CERT_NAMES="allowed.airlock.test denied.airlock.test"
source "$here/lib/world.sh"
source "$here/lib/check.sh"
world_up

# Swap the REDIRECT table world_up installed for the TPROXY one, with its policy routing.
ip netns exec "$GW" nft delete table inet "airlock_${P}_g0"
"$AIRLOCK" nft-rules --iface "$P-g0" --tproxy --proxy-port 15002 >"$W/tproxy.nft"
ip netns exec "$GW" nft -f "$W/tproxy.nft"
ip -n "$GW" rule add fwmark 0x1a1 lookup 417
ip -n "$GW" route add local 0.0.0.0/0 dev lo table 417

world_airlock_config e2e-tproxy <<'YAML'
      - host: allowed.airlock.test
      - host: ssh.airlock.test
        ports: [22, 2525]
YAML
# listen: the TPROXY socket beside the REDIRECT one; two loops whatever the machine has.
sed -i 's|^  proxy: 0.0.0.0:15001$|  proxy: 0.0.0.0:15001\n  tproxy: 0.0.0.0:15002|; s|^version: 1$|version: 1\nthreads: 2|' "$W/airlock.yaml"
world_start_airlock -c "$W/airlock.yaml"
world_tcp_banner "$ORIGIN_IP" 22
world_tcp_banner "$ATTACKER_IP" 22
# A server that speaks first (SMTP-like): the client sends nothing until it has the greeting.
# Told URG, it answers with an urgent (out-of-band) byte between two parts, and closes; told
# BULK, the same behind 256 KiB (a stream airlock relays by splice, which stops at such a byte).
ip netns exec "$NET" timeout 120 python3 -c '
import socket
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("203.0.113.10", 2525)); s.listen(16)
while True:
    c, _ = s.accept(); c.settimeout(5)
    try:
        c.sendall(b"220 airlock-e2e ready\r\n"); line = c.recv(256)
        if line.startswith((b"URG", b"BULK")):
            c.sendall((b"b" * 262144 if line.startswith(b"BULK") else b"") + b"before|")
            c.send(b"!", socket.MSG_OOB); c.sendall(b"|after")
        else:
            c.sendall(b"250 got " + line)
    except OSError:
        pass
    c.close()
' &
WORLD_PIDS+=($!)
world_wait_listen "$NET" t 2525

expect "ready line names the TPROXY listener and two loops" grep -q 'tproxy=0.0.0.0:15002.*threads=2' "$W/airlock.stderr"
expect "the diverted TCP has no NAT entry (TPROXY, not REDIRECT)" \
  bash -c "! ip netns exec $GW nft list table inet airlock_${P}_g0 | grep -q 'redirect to :15002'"

expect "https to an allowed name works" body_is "origin says hello to allowed.airlock.test" sbx_curl https://allowed.airlock.test/
expect "  its connect line: allow, destination as the client addressed it" \
  line event=connect proto=tls name=allowed.airlock.test verdict=allow reason=host_allowed \
  dst=203.0.113.10:443 upstream=203.0.113.10:443 session=e2e-tproxy
expect "http to an allowed name works" body_is "origin says hello to allowed.airlock.test" sbx_curl http://allowed.airlock.test/
expect "  its connect line: allow over http" line event=connect proto=http name=allowed.airlock.test verdict=allow dst=203.0.113.10:80

expect_not "https to a denied name at a forced address fails" \
  sbx_curl --resolve denied.airlock.test:443:$ATTACKER_IP https://denied.airlock.test/
expect "  its connect line: deny host_not_allowed" \
  line event=connect proto=tls name=denied.airlock.test verdict=deny reason=host_not_allowed dst=$ATTACKER_IP:443
expect "plain http with a denied Host gets a 403" \
  body_is 403 sbx_curl -o /dev/null -w '%{http_code}' --resolve denied.airlock.test:80:$ATTACKER_IP http://denied.airlock.test/

expect "SNI spoofing reaches the real origin, not the attacker" \
  body_is "origin says hello to allowed.airlock.test" sbx_curl --resolve allowed.airlock.test:443:$ATTACKER_IP https://allowed.airlock.test/
expect "  its connect line: dst_mismatch, upstream is the origin" \
  line event=connect proto=tls name=allowed.airlock.test verdict=allow reason=dst_mismatch dst=$ATTACKER_IP:443 upstream=203.0.113.10:443
expect_not "TLS to a bare address (no SNI) fails" world_sbx curl -sSk --max-time 10 https://$ATTACKER_IP/
expect "  its connect line: deny no_name" line event=connect proto=tls dst=$ATTACKER_IP:443 verdict=deny reason=no_name

world_sbx dig +short +time=3 +tries=1 @$GW_SBX_IP ssh.airlock.test >/dev/null
expect "opaque TCP to an address from an allowed name's DNS answer works" \
  body_is "SSH-2.0-airlock-e2e" world_tcp_probe 203.0.113.10 22
expect "  its connect line: named from the DNS answer" \
  line event=connect proto=tcp dst=203.0.113.10:22 name=ssh.airlock.test verdict=allow upstream=203.0.113.10:22
expect_not "opaque TCP to an address no DNS answer gave out is refused" world_tcp_probe $ATTACKER_IP 22

# Server speaks first: a client that sends nothing is opaque TCP after the quiet limit (1 s),
# judged by address, and gets the greeting; one that sends half a ClientHello and stalls is
# still cut at the peek deadline (5 s) with reason timeout.
speaks_first() {
  world_sbx timeout 10 python3 -c '
import socket, sys, time
c = socket.create_connection(("203.0.113.10", 2525), timeout=8)
t = time.monotonic(); greeting = c.recv(256).decode().strip()
c.sendall(b"HELO sandbox\r\n"); reply = c.recv(256).decode().strip()
print(greeting, "|", reply, "|", "late" if time.monotonic() - t > 3 else "in time")'
}
expect "a client waiting for the server's greeting gets it" \
  body_is "220 airlock-e2e ready | 250 got HELO sandbox | in time" speaks_first
expect "  its connect line: tcp, client_silent, named from the DNS answer" \
  line event=connect proto=tcp dst=203.0.113.10:2525 name=ssh.airlock.test verdict=allow notes~=client_silent
# A read stops short before an urgent byte: the bytes behind it and the server's FIN must
# not wait for the idle limit. The urgent byte itself is not passed on (nothing relays
# out-of-band data).
urgent_then_close() {
  world_sbx timeout 10 python3 -c '
import socket, sys, time
c = socket.create_connection(("203.0.113.10", 2525), timeout=8)
c.recv(256); c.sendall(sys.argv[1].encode() + b"\r\n"); t = time.monotonic(); got = b""
while True:
    d = c.recv(65536)
    if not d:
        break
    got += d
print(len(got), got[-13:].decode(), "in time" if time.monotonic() - t < 3 else "late")' "$1"
}
expect "bytes behind a server's urgent byte, and its close, reach the client at once" \
  body_is "13 before||after in time" urgent_then_close URG
expect "  the same behind 256 KiB (spliced): nothing cut at the urgent byte" \
  body_is "262157 before||after in time" urgent_then_close BULK
stalled_hello() {
  world_sbx timeout 15 python3 -c '
import socket, time
c = socket.create_connection(("203.0.113.10", 443), timeout=12)
c.sendall(bytes([0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03, 0x03]))  # a record of 512, 6 sent
t = time.monotonic(); data = c.recv(64)
print("closed" if not data or data[0] == 0x15 else "data", round(time.monotonic() - t))'
}
expect "a ClientHello that never finishes is cut at the peek deadline" \
  bash -c "$(declare -f world_sbx stalled_hello); SBX=$SBX; stalled_hello | grep -Eqx 'closed [456]'"
expect "  its connect line: deny timeout" line event=connect proto=tls dst=203.0.113.10:443 verdict=deny reason=timeout

# Connections land on both loops (SO_REUSEPORT spreads them by address and port): 40
# in a row all work and each has its own connection number.
expect "40 connections in a row through both loops all work" bash -c "
  for i in \$(seq 40); do ip netns exec $SBX curl -sS --max-time 10 -o /dev/null http://allowed.airlock.test/ || exit 1; done"
expect "  and their connection numbers are all different" python3 -c '
import json, sys
conns = [json.loads(l)["conn"] for l in open(sys.argv[1]) if "\"event\":\"connect\"" in l]
sys.exit(0 if len(conns) >= 40 and len(conns) == len(set(conns)) else 1)' "$W/decisions.jsonl"

# A second daemon on the same ports must fail to start, not quietly take half the traffic.
cp "$W/airlock.yaml" "$W/second.yaml"
sed -i "s|decisions: .*|decisions: $W/second.jsonl|; /^  dns: /d" "$W/second.yaml"
expect "a second daemon cannot join the first one's port group" bash -c "
  ip netns exec $GW timeout 10 $AIRLOCK daemon -c $W/second.yaml 2>&1 | tee /dev/stderr | grep -q 'cannot listen for proxy on 0.0.0.0:15001'"

# Nothing reached the attacker.
expect_not "the attacker's origin saw no request" grep -q . "$W/attacker-access.log"

kill -TERM "$AIRLOCK_PID"
status=0
wait "$AIRLOCK_PID" || status=$?
expect "airlock exits 0 on SIGTERM" test "$status" -eq 0

check_summary
