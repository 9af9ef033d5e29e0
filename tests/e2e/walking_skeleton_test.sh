#!/usr/bin/env bash
# End to end, thinly: a sandbox namespace whose only way out is airlock, a real DNS
# server (unbound, query log on) and a real nginx origin with certificates made here.
# Asserts the allowed paths work, the denied ones fail, spoofing reaches nothing, denied
# names never reach the upstream, and each attempt has its decision line.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)

WORLD_RECORDS="allowed.airlock.test 203.0.113.10
denied.airlock.test 203.0.113.66
private.airlock.test 10.0.0.5
ssh.airlock.test 203.0.113.10"
WORLD_CERT_NAMES="allowed.airlock.test denied.airlock.test"
source "$here/lib/world.sh"
source "$here/lib/check.sh"
world_up

world_airlock_config e2e-sandbox <<'YAML'
      - host: allowed.airlock.test
      - host: private.airlock.test
      - host: ssh.airlock.test
        ports: [22, 2223, 2224]
YAML
world_start_airlock -c "$W/airlock.yaml"
world_tcp_banner "$ORIGIN_IP" 22
world_tcp_banner "$ORIGIN_IP" 2222
world_tcp_banner "$ORIGIN_IP" 2224 reset
world_tcp_banner "$ATTACKER_IP" 22


# 1. Allowed name over HTTPS and HTTP reaches the origin.
expect "https to an allowed name works" body_is "origin says hello to allowed.airlock.test" sbx_curl https://allowed.airlock.test/
expect "  its connect line: allow host_allowed, to airlock's own resolution" \
  line event=connect proto=tls name=allowed.airlock.test verdict=allow reason=host_allowed \
  dst=203.0.113.10:443 upstream=203.0.113.10:443 session=e2e-sandbox rule="$W/airlock.yaml:11" \
  "client~=$SBX_IP:"
expect "  its dns line: allow, answered with the origin's address" \
  line event=dns name=allowed.airlock.test qtype=A verdict=allow rcode=NOERROR
expect "http to an allowed name works" body_is "origin says hello to allowed.airlock.test" sbx_curl http://allowed.airlock.test/
expect "  its connect line: allow over http" line event=connect proto=http name=allowed.airlock.test verdict=allow upstream=203.0.113.10:80

# The relay moves bytes with splice; 5 MB must arrive exactly, over TLS and plain HTTP.
want=$(sha256sum <"$W/big.bin")
expect "5 MB over HTTPS through the relay arrive intact" \
  body_is "$want" bash -c "ip netns exec $SBX curl -sS --max-time 30 --cacert $W/ca.crt https://allowed.airlock.test/big.bin | sha256sum"
expect "5 MB over HTTP through the relay arrive intact" \
  body_is "$want" bash -c "ip netns exec $SBX curl -sS --max-time 30 http://allowed.airlock.test/big.bin | sha256sum"
expect "  and the line counts them" python3 -c '
import json, sys
sizes = [json.loads(l).get("bytes_down") or 0 for l in open(sys.argv[1]) if "\"proto\":\"http\"" in l]
sys.exit(0 if any(5000000 < s < 5010000 for s in sizes) else 1)' "$W/decisions.jsonl"
expect "a repeated allowed query is answered from the cache" \
  line event=dns name=allowed.airlock.test qtype=A verdict=allow notes~=cache_hit
expect "  so the upstream saw the name once" test "$(grep -c 'allowed.airlock.test. A IN' "$W/unbound.log")" -eq 1

# 2. A denied name: DNS answers NXDOMAIN itself and never asks the upstream.
expect_not "https to a denied name fails" sbx_curl https://denied.airlock.test/
expect "  its dns line: deny host_not_allowed, NXDOMAIN" \
  line event=dns name=denied.airlock.test verdict=deny reason=host_not_allowed rcode=NXDOMAIN
expect "  dig sees NXDOMAIN with the reason as an extended DNS error" \
  bash -c "ip netns exec $SBX dig +time=3 +tries=1 @$GW_SBX_IP denied.airlock.test | tee /dev/stderr | grep -q 'status: NXDOMAIN' && ip netns exec $SBX dig +time=3 +tries=1 @$GW_SBX_IP denied.airlock.test | grep -q 'EDE: 15 (Blocked).*host_not_allowed'"
expect "  the upstream's query log shows the allowed name (the log works)" grep -q 'allowed.airlock.test. A IN' "$W/unbound.log"
expect_not "  the upstream's query log never saw the denied name" grep -q 'denied.airlock.test' "$W/unbound.log"

expect "DNS over TCP answers an allowed name" \
  bash -c "ip netns exec $SBX dig +tcp +time=3 +tries=1 @$GW_SBX_IP allowed.airlock.test | grep -q 'status: NOERROR'"
expect "DNS over TCP refuses a denied name" \
  bash -c "ip netns exec $SBX dig +tcp +time=3 +tries=1 @$GW_SBX_IP denied.airlock.test | grep -q 'status: NXDOMAIN'"
expect "the DoH canary use-application-dns.net gets NXDOMAIN" \
  bash -c "ip netns exec $SBX dig +time=3 +tries=1 @$GW_SBX_IP use-application-dns.net | grep -q 'status: NXDOMAIN'"
expect "  its dns line names it" line event=dns name=use-application-dns.net verdict=deny reason=host_denied
expect_not "  and the upstream never saw it" grep -q 'use-application-dns' "$W/unbound.log"

# A ClientHello cut into TCP segments or spread over several TLS records is judged the same.
split_hello() { world_sbx timeout 20 python3 "$here/lib/split_hello.py" "$1" "$2" "$3" "$W/ca.crt"; }
expect "an allowed hello in 7 segments 20 ms apart works" \
  body_is "origin says hello to allowed.airlock.test" split_hello segments allowed.airlock.test 203.0.113.10
expect "an allowed hello over several TLS records works" \
  body_is "origin says hello to allowed.airlock.test" split_hello records allowed.airlock.test 203.0.113.10
expect "a denied hello in segments is still refused with an alert" \
  bash -c "$(declare -f world_sbx split_hello); SBX=$SBX W=$W here=$here; split_hello segments denied.airlock.test $ATTACKER_IP | grep -q 'refused:.*ACCESS_DENIED'"
expect "a denied hello over records is still refused with an alert" \
  bash -c "$(declare -f world_sbx split_hello); SBX=$SBX W=$W here=$here; split_hello records denied.airlock.test $ATTACKER_IP | grep -q 'refused:.*ACCESS_DENIED'"
expect "  both denials logged as tls host_not_allowed" python3 -c '
import json, sys
n = sum(1 for l in open(sys.argv[1]) if (o := json.loads(l)).get("name") == "denied.airlock.test"
        and o.get("event") == "connect" and o.get("proto") == "tls" and o.get("reason") == "host_not_allowed")
sys.exit(0 if n >= 2 else 1)' "$W/decisions.jsonl"

# 3. Denied by the proxy even when the client brings its own address.
expect_not "https to a denied name at a forced address fails" \
  sbx_curl --resolve denied.airlock.test:443:$ATTACKER_IP https://denied.airlock.test/
expect "  its connect line: deny host_not_allowed" \
  line event=connect proto=tls name=denied.airlock.test verdict=deny reason=host_not_allowed dst=$ATTACKER_IP:443 upstream=null
expect "  the client was told with a TLS alert, not a hang" \
  bash -c "ip netns exec $SBX curl -sS --max-time 10 --cacert $W/ca.crt --resolve denied.airlock.test:443:$ATTACKER_IP https://denied.airlock.test/ 2>&1 | grep -qi 'alert access denied'"
expect "plain http with a denied Host gets a 403 naming the reason" \
  bash -c "ip netns exec $SBX curl -sS --max-time 10 -i -H 'Host: denied.airlock.test' http://$ATTACKER_IP/ | grep -q 'X-Airlock-Reason: host_not_allowed'"
expect "  and a JSON body with reason, rule, name and session" \
  bash -c "ip netns exec $SBX curl -sS --max-time 10 -H 'Host: denied.airlock.test' http://$ATTACKER_IP/ | python3 -c 'import json,sys; d=json.load(sys.stdin); assert d == {\"reason\": \"host_not_allowed\", \"rule\": \"default\", \"name\": \"denied.airlock.test\", \"session\": \"e2e-sandbox\"}, d'"

# 4. SNI and Host spoofing: the allowed name at the attacker's address reaches only the real origin.
expect "SNI spoofing reaches the real origin, not the attacker" \
  body_is "origin says hello to allowed.airlock.test" sbx_curl --resolve allowed.airlock.test:443:$ATTACKER_IP https://allowed.airlock.test/
expect "  its connect line: dst_mismatch, upstream is the origin" \
  line event=connect proto=tls name=allowed.airlock.test verdict=allow reason=dst_mismatch dst=$ATTACKER_IP:443 upstream=203.0.113.10:443
expect "Host spoofing over http reaches the real origin, not the attacker" \
  body_is "origin says hello to allowed.airlock.test" sbx_curl --resolve allowed.airlock.test:80:$ATTACKER_IP http://allowed.airlock.test/
expect "  its connect line: dst_mismatch" \
  line event=connect proto=http name=allowed.airlock.test reason=dst_mismatch dst=$ATTACKER_IP:80 upstream=203.0.113.10:80
expect "a Host that names another port than the packet's is refused with 403 (ROBUSTNESS B1)" \
  body_is 403 sbx_curl -o /dev/null -w '%{http_code}' -H 'Host: allowed.airlock.test:8080' http://allowed.airlock.test/
expect "  its connect line: parse_error, host_port_mismatch" \
  line event=connect proto=http dst=203.0.113.10:80 verdict=deny reason=parse_error 'notes~=host_port_mismatch'

# 5. No name at all: TLS straight to an address is denied.
expect_not "TLS to a bare address (no SNI) fails" world_sbx curl -sSk --max-time 10 https://$ATTACKER_IP/
expect "  its connect line: deny no_name" line event=connect proto=tls dst=$ATTACKER_IP:443 verdict=deny reason=no_name

# 5b. First bytes that never make a whole ClientHello (ROBUSTNESS A3, A4): a hello that
#     announces more than airlock reads, and one cut short by a FIN or by a RST. Each is
#     refused in the channel's language (a TLS alert) where the client is still there to
#     read it, and logged with its reason.
raw_tls() {
  world_sbx timeout 10 python3 -c '
import socket, struct, sys
mode, addr = sys.argv[1], sys.argv[2]
c = socket.create_connection((addr, 443), timeout=5)
if mode == "oversized":  # a ClientHello of 1 MiB announced: past the 16 KiB cap
    c.sendall(bytes([0x16, 3, 1, 0x40, 0, 1]) + (1 << 20).to_bytes(3, "big") + b"\x03\x03" + bytes(32))
else:  # 31 bytes of a ClientHello that says it has 196
    c.sendall(bytes([0x16, 3, 1, 0, 200, 1, 0, 0, 196, 3, 3]) + bytes(20))
    if mode == "rst":
        c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        c.close()
        print("sent"); sys.exit(0)
    c.shutdown(socket.SHUT_WR)
try:
    got = c.recv(64)
    print("alert" if got[:1] == b"\x15" else "closed" if not got else "other")
except ConnectionResetError:
    print("reset")' "$@"
}
expect "a ClientHello that announces 1 MiB is refused at once with a TLS alert" body_is alert raw_tls oversized $ATTACKER_IP
expect "  its connect line: tls, too_large" line event=connect proto=tls "dst=$ATTACKER_IP:443" verdict=deny reason=too_large
expect "a ClientHello cut short by the client's FIN is answered with a TLS alert" body_is alert raw_tls fin $ATTACKER_IP
expect "  its connect line: tls, truncated" line event=connect proto=tls "dst=$ATTACKER_IP:443" verdict=deny reason=truncated
raw_tls rst $ATTACKER_IP >/dev/null
expect "one cut short by the client's RST is logged as truncated too" \
  line --count 2 event=connect "dst=$ATTACKER_IP:443" verdict=deny reason=truncated

# 5c. Encrypted ClientHello (ROBUSTNESS A9): a real ClientHello with an
#     encrypted_client_hello extension (0xfe0d) added is judged by its outer SNI, the only
#     name airlock can read, and its line says so. The origin, which has no ECH keys,
#     answers the outer hello (its handshake then fails: the hello was edited).
ech_hello() {
  world_sbx timeout 10 python3 -c '
import os, socket, ssl, struct, sys
host, addr = sys.argv[1], sys.argv[2]
ctx = ssl.create_default_context()
bio_in, bio_out = ssl.MemoryBIO(), ssl.MemoryBIO()
tls = ctx.wrap_bio(bio_in, bio_out, server_hostname=host)
try:
    tls.do_handshake()
except ssl.SSLWantReadError:
    pass
hello = bio_out.read()
body = hello[9:]  # after the record and handshake headers
at = 2 + 32
at += 1 + body[at]                                   # session id
at += 2 + struct.unpack(">H", body[at:at + 2])[0]    # cipher suites
at += 1 + body[at]                                   # compression methods
# ECHClientHello, outer: type, cipher suite (HKDF-SHA256, AES-128-GCM), config id, enc, payload.
payload = bytes([0]) + struct.pack(">HHB", 1, 1, 7) + struct.pack(">H", 32) + os.urandom(32) + struct.pack(">H", 128) + os.urandom(128)
ech = struct.pack(">HH", 0xfe0d, len(payload)) + payload
exts = body[at + 2:] + ech
body = body[:at] + struct.pack(">H", len(exts)) + exts
handshake = bytes([1]) + len(body).to_bytes(3, "big") + body
c = socket.create_connection((addr, 443), timeout=5)
c.sendall(bytes([0x16, 3, 1]) + struct.pack(">H", len(handshake)) + handshake)
try:
    got = c.recv(5)
    print("alert" if got[:1] == b"\x15" else "server hello" if got[:1] == b"\x16" else "closed" if not got else "other")
except ConnectionResetError:
    print("reset")' "$@"
}
expect "a ClientHello with ECH whose outer SNI is allowed is relayed to the origin" \
  body_is "server hello" ech_hello allowed.airlock.test "$ORIGIN_IP"
expect "  its connect line: allowed by the outer name, noted ech_outer_sni" \
  line event=connect proto=tls name=allowed.airlock.test verdict=allow 'notes~=ech_outer_sni'
expect "one whose outer SNI is denied gets a TLS alert" body_is alert ech_hello denied.airlock.test "$ORIGIN_IP"
expect "  its connect line: denied by the outer name, noted ech_outer_sni" \
  line event=connect proto=tls name=denied.airlock.test verdict=deny reason=host_not_allowed 'notes~=ech_outer_sni'

# 6. An allowed name that resolves to a private address: stripped in DNS, refused by the proxy.
world_sbx dig +time=3 +tries=1 +short @$GW_SBX_IP private.airlock.test >"$W/private.dig" 2>&1 || true
expect "  dig gets no address for it" test ! -s "$W/private.dig"
expect "  its dns line: deny private_address" line event=dns name=private.airlock.test verdict=deny reason=private_address
expect "http to it through a forced address gets 403" \
  body_is 403 sbx_curl -o /dev/null -w '%{http_code}' --resolve private.airlock.test:80:$ATTACKER_IP http://private.airlock.test/
expect "  its connect line: deny private_address" line event=connect name=private.airlock.test verdict=deny reason=private_address

# 7. Opaque TCP (ssh-like, no name on the wire): allowed only to an address this sandbox got
#    from airlock's DNS for a name allowed on that port.
world_sbx dig +short +time=3 +tries=1 @$GW_SBX_IP ssh.airlock.test >/dev/null
expect "ssh-like TCP to an address learned from an allowed name's DNS answer works" \
  body_is "SSH-2.0-airlock-e2e" world_tcp_probe 203.0.113.10 22
expect "  its connect line: tcp, named from the DNS answer, allowed by the name's rule" \
  line event=connect proto=tcp dst=203.0.113.10:22 name=ssh.airlock.test verdict=allow reason=host_allowed upstream=203.0.113.10:22
# A denied opaque connection is refused with a TCP reset, before any byte (speak.py prints
# "reset" only when its first read fails with ECONNRESET; a FIN would be "closed").
speak() { world_sbx timeout 15 python3 "$here/lib/speak.py" "$@"; }
expect "the same address on a port the rule does not list is refused with a reset" body_is reset speak 203.0.113.10 2222 opaque
expect "  its connect line: port_not_allowed, still named" \
  line event=connect proto=tcp dst=203.0.113.10:2222 name=ssh.airlock.test verdict=deny reason=port_not_allowed
expect_not "an allowed port where nothing listens at the origin fails" world_tcp_probe 203.0.113.10 2223
expect "  its connect line: upstream_unreachable, allowed by the rule but not reached" \
  line event=connect proto=tcp dst=203.0.113.10:2223 name=ssh.airlock.test verdict=allow reason=upstream_unreachable
expect "a connection the origin ends with a FIN ends with a FIN at the client" body_is eof world_tcp_ending 203.0.113.10 22
expect "one the origin resets is reset at the client too, not ended cleanly" body_is reset world_tcp_ending 203.0.113.10 2224
expect "  its connect line: allowed, and says the upstream reset it" \
  line event=close proto=tcp dst=203.0.113.10:2224 verdict=allow reason=host_allowed notes~=upstream_reset
expect "ssh-like TCP to an address no DNS answer gave out is refused with a reset" body_is reset speak $ATTACKER_IP 22 opaque
expect "  its connect line: no_name" line event=connect proto=tcp dst=$ATTACKER_IP:22 verdict=deny reason=no_name

# 8. Nothing ever reached the attacker, and the log is well-formed and complete.
expect "the attacker's origin saw no request at all" test ! -s "$W/attacker-access.log"
expect "every decision line is JSON with every contract field" python3 - "$W/decisions.jsonl" <<'PY'
import json, sys
fields = ["ts", "event", "session", "labels", "client", "name", "dst", "upstream", "proto", "verdict", "reason", "rule", "conn"]
lines = open(sys.argv[1]).read().splitlines()
assert lines, "empty log"
for l in lines:
    o = json.loads(l)
    missing = [f for f in fields if f not in o]
    assert not missing, (missing, l)
    if o["event"] in ("connect", "close"):
        for f in ("bytes_up", "bytes_down", "duration_ms"):
            assert f in o, (f, l)
print(len(lines), "lines checked")
PY

# 9. Shutdown with a relayed connection open (ROBUSTNESS E7). SIGTERM: airlock stops
#    accepting at once, gives the open connection the drain time (5 s), cuts it then, writes
#    its line and exits 0. A second signal does not wait for the drain.
# keep_alive NAME: from the sandbox, one HTTP request on a connection then kept open, silent;
# writes its local port to $W/NAME.port once answered, and at the end how the connection ended.
keep_alive() {
  rm -f "$W/$1.port"
  world_sbx timeout 30 python3 -c '
import socket, sys
c = socket.create_connection(("203.0.113.10", 80), timeout=5)
c.sendall(b"GET / HTTP/1.1\r\nHost: allowed.airlock.test\r\n\r\n")
c.recv(4096)
open(sys.argv[1] + ".port", "w").write(str(c.getsockname()[1]))
c.settimeout(25)
try:
    while c.recv(4096):
        pass
    print("closed")
except OSError as e:
    print("error:", e)' "$W/$1" >"$W/$1.out" &
  KEEPER=$!
  for _ in $(seq 400); do [[ -s $W/$1.port ]] && break; sleep 0.05; done
  # A signal sent before the answer would test a connection still in the accept queue.
  expect "  (a connection is open, its request answered, before the signal)" test -s "$W/$1.port"
}
stopped() {  # stopped PID T0: waits for it, sets $status and $took (ms since T0, from date +%s%N)
  status=0
  wait "$1" || status=$?
  took=$((($(date +%s%N) - $2) / 1000000))
}
keep_alive drain
t0=$(date +%s%N)
kill -TERM "$AIRLOCK_PID"
sleep 0.3
expect_not "after SIGTERM a new connection is refused at once" sbx_curl --max-time 2 http://allowed.airlock.test/
stopped "$AIRLOCK_PID" "$t0"
expect "airlock exits 0 on SIGTERM" test "$status" -eq 0
expect "  once the drain time (5 s) has passed for the open connection (took ${took} ms)" \
  test "$took" -ge 4500 -a "$took" -lt 10000
wait "$KEEPER" || true
expect "  which the client then sees end" grep -q . "$W/drain.out"
expect "  and whose line was written before the exit" \
  line event=connect proto=http name=allowed.airlock.test verdict=allow "client=$SBX_IP:$(cat "$W/drain.port")"

world_start_airlock -c "$W/airlock.yaml"
keep_alive twice
kill -TERM "$AIRLOCK_PID"
sleep 0.3
t0=$(date +%s%N)
kill -TERM "$AIRLOCK_PID"
stopped "$AIRLOCK_PID" "$t0"
expect "a second SIGTERM ends airlock without the drain time (took ${took} ms), still 0" \
  test "$status" -eq 0 -a "$took" -lt 3000
wait "$KEEPER" || true
expect "  and the connection it cut has its line" \
  line event=connect proto=http name=allowed.airlock.test "client=$SBX_IP:$(cat "$W/twice.port")"

check_summary
