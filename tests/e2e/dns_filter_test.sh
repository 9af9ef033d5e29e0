#!/usr/bin/env bash
# The filtering DNS server against a real upstream (unbound, query log on) and real dig:
# CNAME chains to CDN names, ANY refused, truncation then TCP retry, malformed packets
# answered FORMERR or ignored while the server keeps serving, and an upstream that stops
# answering turned into SERVFAIL, never a made-up answer.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
many=""
for i in $(seq 1 60); do many+="big.airlock.test 203.0.113.$((100 + i))"$'\n'; done
WORLD_RECORDS="www.airlock.test CNAME edge.cdn.airlock.test.
edge.cdn.airlock.test 203.0.113.10
stray.airlock.test 203.0.113.77
svc.airlock.test HTTPS 1 . alpn="h3,h2" port=443 ipv4hint=203.0.113.10 ech=AEn+DQBFKwAgACABWIHUGj4u+PIggYXcR5JF0gYk3dCRioBW8uJq9H4mKAAIAAEAAQABAANAEnB1YmxpYy50bHMtZWNoLmRldgAA
$many"
WORLD_CERT_NAMES="www.airlock.test"
source "$here/lib/world.sh"
source "$here/lib/check.sh"
world_up
world_airlock_config dns-sandbox <<'YAML'
      - host: www.airlock.test
      - host: big.airlock.test
      - host: late.airlock.test
      - host: svc.airlock.test
YAML
world_start_airlock -c "$W/airlock.yaml"

qdig() { world_sbx dig +time=3 +tries=1 @"$GW_SBX_IP" "$@"; }

qdig www.airlock.test >"$W/cname.out" || true
expect "a CNAME chain to a CDN name the policy does not list is answered" grep -q 'status: NOERROR' "$W/cname.out"
expect "  with the CNAME and the CDN's address" \
  bash -c "grep -q 'CNAME.*edge.cdn.airlock.test' $W/cname.out && grep -q '203.0.113.10' $W/cname.out"
expect "  and its line lists the address" line event=dns name=www.airlock.test verdict=allow 'answers~=203.0.113.10'
expect "the CDN name itself, asked directly, is denied (it is allowed only under the asked name)" \
  bash -c "qdig() { ip netns exec $SBX dig +time=3 +tries=1 @$GW_SBX_IP \"\$@\"; }; qdig edge.cdn.airlock.test | grep -q 'status: NXDOMAIN'"

world_net_dig() { ip netns exec "$NET" dig +time=3 +tries=1 @"$DNS_IP" "$@"; }
expect "the upstream's HTTPS record carries ech, an address hint and h3 (the fixture works)" \
  bash -c "$(declare -f world_net_dig); NET=$NET DNS_IP=$DNS_IP; world_net_dig svc.airlock.test HTTPS | grep 'IN.HTTPS' | grep -q 'ech='"
qdig svc.airlock.test HTTPS >"$W/svc.out" || true
expect "HTTPS records reach the sandbox without ech, address hints or h3" \
  bash -c "grep 'IN.HTTPS' $W/svc.out | grep -q 'alpn=\"h2\" port=443' && ! grep 'IN.HTTPS' $W/svc.out | grep -qE 'ech=|ipv4hint|h3'"
expect "  and its line says it was rewritten" line event=dns name=svc.airlock.test qtype=HTTPS 'notes~=svcb_rewritten_1'

expect "an EDNS version other than 0 gets BADVERS" \
  bash -c "ip netns exec $SBX dig +time=3 +tries=1 +edns=1 +noednsnegotiation @$GW_SBX_IP www.airlock.test | grep -q 'status: BADVERS'"

expect "ANY is refused" bash -c "ip netns exec $SBX dig +time=3 +tries=1 @$GW_SBX_IP www.airlock.test ANY | grep -q 'status: REFUSED'"
expect "  and logged as dns_type_refused, never forwarded" line event=dns name=www.airlock.test qtype=ANY reason=dns_type_refused

qdig +ignore +bufsize=512 big.airlock.test >"$W/big-udp.out" || true
expect "an answer too big for the client's UDP size is truncated (TC)" grep -q 'flags:.* tc' "$W/big-udp.out"
qdig +bufsize=512 big.airlock.test >"$W/big.out" || true
expect "  and dig's retry over TCP gets all 60 addresses" test "$(grep -cE "IN.A.203.0.113.(1[0-5][0-9]|160)$" "$W/big.out")" -eq 60

# Malformed packets from a raw UDP socket: FORMERR or silence, never a crash.
expect "malformed queries get FORMERR or silence" world_sbx timeout 20 python3 - "$GW_SBX_IP" <<'PY'
import socket, struct, sys
server = (sys.argv[1], 53)
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(0.5)
def header(qd=1, an=0, ns=0, ar=0, flags=0x0100, qid=0x4242):
    return struct.pack(">HHHHHH", qid, flags, qd, an, ns, ar)
q = b"\x03www\x07airlock\x04test\x00\x00\x01\x00\x01"
cases = {
    "empty": b"",
    "one byte": b"\x00",
    "eleven bytes": header()[:11],
    "self pointer": header() + b"\xc0\x0c\x00\x01\x00\x01",
    "forward pointer": header() + b"\xc0\x20\x00\x01\x00\x01" + b"\x00" * 20,
    "label 64": header() + b"\x40" + b"a" * 64 + b"\x00\x00\x01\x00\x01",
    "qdcount 2": header(qd=2) + q + q,
    "qdcount 0": header(qd=0),
    "counts 65535": header(qd=65535, an=65535, ns=65535, ar=65535),
    "a response": header(flags=0x8180) + q,
    "opcode update": header(flags=0x2800) + q,
    "truncated question": header() + q[:7],
}
bad = []
for name, pkt in cases.items():
    s.sendto(pkt, server)
    try:
        reply, _ = s.recvfrom(65535)
    except socket.timeout:
        continue  # silence is fine
    rcode = reply[3] & 0x0F if len(reply) >= 4 else None
    if len(reply) < 12 or rcode not in (1, 4, 5):  # FORMERR, NOTIMP, REFUSED
        bad.append((name, reply[:16]))
    if len(reply) >= 2 and reply[:2] != pkt[:2]:
        bad.append((name, "reply id differs"))
assert not bad, bad
print(len(cases), "malformed packets handled")
PY
expect "  and the server keeps serving" bash -c "ip netns exec $SBX dig +time=3 +tries=1 @$GW_SBX_IP www.airlock.test | grep -q 'status: NOERROR'"
expect "  each malformed packet has its line" line event=dns reason=dns_malformed
expect "airlock is still running" kill -0 "$AIRLOCK_PID"

# The upstream stops answering: SERVFAIL within the resolver's budget, nothing invented.
kill -STOP "${WORLD_PIDS[0]}"
start=$(date +%s)
qdig +time=8 late.airlock.test >"$W/late.out" 2>&1 || true
elapsed=$(( $(date +%s) - start ))
kill -CONT "${WORLD_PIDS[0]}"
expect "an upstream that does not answer gives SERVFAIL" grep -q 'status: SERVFAIL' "$W/late.out"
expect "  within 5 seconds (took ${elapsed}s)" test "$elapsed" -le 5
expect "  logged as resolve_failed with the upstream's state" \
  line event=dns name=late.airlock.test reason=resolve_failed rcode=SERVFAIL 'notes~=upstream_timeout'

check_summary
