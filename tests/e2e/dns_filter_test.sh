#!/usr/bin/env bash
# The filtering DNS server against a real upstream (unbound, query log on) and real dig:
# CNAME chains to CDN names, ANY and other classes than IN refused and never asked upstream
# (the upstream's own query log says so), a wildcard rule that does not cover its apex (DNS
# and connections), truncation then TCP retry, malformed packets answered FORMERR or ignored
# (one line each) while the server keeps serving, and an upstream that stops answering
# turned into SERVFAIL, never a made-up answer.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
many=""
for i in $(seq 1 60); do many+="big.airlock.test 203.0.113.$((100 + i))"$'\n'; done
WORLD_RECORDS="www.airlock.test CNAME edge.cdn.airlock.test.
edge.cdn.airlock.test 203.0.113.10
stray.airlock.test 203.0.113.77
refused.airlock.test 203.0.113.10
wild.airlock.test 203.0.113.10
a.wild.airlock.test 203.0.113.10
svc.airlock.test HTTPS 1 . alpn="h3,h2" port=443 ipv4hint=203.0.113.10 ech=AEn+DQBFKwAgACABWIHUGj4u+PIggYXcR5JF0gYk3dCRioBW8uJq9H4mKAAIAAEAAQABAANAEnB1YmxpYy50bHMtZWNoLmRldgAA
$many"
WORLD_CERT_NAMES="www.airlock.test wild.airlock.test a.wild.airlock.test"
source "$here/lib/world.sh"
source "$here/lib/check.sh"
world_up
world_airlock_config dns-sandbox <<'YAML'
      - host: www.airlock.test
      - host: big.airlock.test
      - host: late.airlock.test
      - host: svc.airlock.test
      - host: refused.airlock.test
      - host: "*.wild.airlock.test"
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
expect "  and logged as dns_type_refused" line event=dns name=www.airlock.test qtype=ANY reason=dns_type_refused

# upstream_asked NAME: "TYPE CLASS" of each query for NAME in the upstream's query log
# ("... info: 203.0.113.1 NAME. TYPE CLASS"), sorted, one a line.
upstream_asked() {
  awk -v n="$(tr A-Z a-z <<<"$1.")" 'tolower($(NF-2)) == n { print $(NF-1), $NF }' "$W/unbound.log" | sort
}
# What is refused for a name the policy allows, over UDP and TCP: ANY, and every class but IN.
# None of it may reach the upstream: its query log, live (it shows the control asked after
# them), shows the name once, for the control alone.
for q in "ANY" "+tcp ANY" "CH A" "HS A" "CH TXT"; do
  expect "refused.airlock.test $q is refused" \
    bash -c "ip netns exec $SBX dig +time=3 +tries=1 @$GW_SBX_IP refused.airlock.test $q | grep -q 'status: REFUSED'"
done
expect "  each logged once as dns_type_refused (5 lines)" \
  line --count 5 event=dns name=refused.airlock.test verdict=deny reason=dns_type_refused rcode=REFUSED
expect "  its A query afterwards (the control) is answered" body_is 203.0.113.10 qdig +short refused.airlock.test A
expect "  the upstream saw that control query and nothing else for the name (none of the refused)" \
  body_is "A IN" upstream_asked refused.airlock.test
expect "  nor www.airlock.test's ANY (its A query only)" body_is "A IN" upstream_asked www.airlock.test

# A wildcard covers subdomains at any depth, never its apex: *.wild.airlock.test allows
# a.wild.airlock.test, not wild.airlock.test, in DNS and in connections (TLS and plain HTTP,
# to the address the apex really has: curl --resolve, so only the name is judged).
expect "a name under a wildcard resolves (the control)" body_is 203.0.113.10 qdig +short a.wild.airlock.test
expect "  allowed by the wildcard's rule" \
  line event=dns name=a.wild.airlock.test verdict=allow reason=host_allowed "rule=$W/airlock.yaml:16"
expect "the wildcard's apex does not resolve" bash -c "ip netns exec $SBX dig +time=3 +tries=1 @$GW_SBX_IP wild.airlock.test | grep -q 'status: NXDOMAIN'"
expect "  logged host_not_allowed" line event=dns name=wild.airlock.test verdict=deny reason=host_not_allowed rule=default
apex_not_asked() { [[ -z $(upstream_asked wild.airlock.test) && $(upstream_asked a.wild.airlock.test) == "A IN" ]]; }
expect "  and never asked upstream (its subdomain was)" apex_not_asked
wresolve() { echo "--resolve $1:443:$ORIGIN_IP --resolve $1:80:$ORIGIN_IP"; }
expect "a TLS connection naming a subdomain of the wildcard works (the control)" \
  body_is "origin says hello to a.wild.airlock.test" sbx_curl $(wresolve a.wild.airlock.test) https://a.wild.airlock.test/
origin_seen=$(wc -l <"$W/origin-access.log")
expect_not "a TLS connection naming the apex is refused" sbx_curl $(wresolve wild.airlock.test) https://wild.airlock.test/
expect "  denied host_not_allowed" \
  line event=connect proto=tls name=wild.airlock.test verdict=deny reason=host_not_allowed dst=$ORIGIN_IP:443
expect "plain HTTP naming the apex gets 403 host_not_allowed" \
  bash -c "ip netns exec $SBX curl -sS --max-time 10 $(wresolve wild.airlock.test) -D - -o /dev/null http://wild.airlock.test/ | grep -qi '^x-airlock-reason: host_not_allowed'"
expect "  denied host_not_allowed" \
  line event=connect proto=http name=wild.airlock.test verdict=deny reason=host_not_allowed dst=$ORIGIN_IP:80
expect "  the origin saw neither" test "$(wc -l <"$W/origin-access.log")" -eq "$origin_seen"

qdig +ignore +bufsize=512 big.airlock.test >"$W/big-udp.out" || true
expect "an answer too big for the client's UDP size is truncated (TC)" grep -q 'flags:.* tc' "$W/big-udp.out"
qdig +bufsize=512 big.airlock.test >"$W/big.out" || true
expect "  and dig's retry over TCP gets all 60 addresses" test "$(grep -cE "IN.A.203.0.113.(1[0-5][0-9]|160)$" "$W/big.out")" -eq 60

# Malformed packets, each from a UDP socket of its own (so its answers and its decision lines
# are told apart by the client port): every one gets exactly one decision line, at most one
# answer (FORMERR, NOTIMP or REFUSED, with the query's id), the answer's rcode is the one its
# line names, and a packet left unanswered has a line without an rcode. Never a crash.
expect "malformed queries: each gets one line, and at most one answer that its line names" \
  world_sbx timeout 30 python3 - "$GW_SBX_IP" "$SBX_IP" "$W/decisions.jsonl" <<'PY'
import json, selectors, socket, struct, sys, time
server, client_ip, log = (sys.argv[1], 53), sys.argv[2], sys.argv[3]
def header(qd=1, an=0, ns=0, ar=0, flags=0x0100, qid=0x4242):
    return struct.pack(">HHHHHH", qid, flags, qd, an, ns, ar)
q = b"\x03www\x07airlock\x04test\x00\x00\x01\x00\x01"
cases = {
    "empty": lambda qid: b"",
    "one byte": lambda qid: b"\x00",
    "eleven bytes": lambda qid: header(qid=qid)[:11],
    "self pointer": lambda qid: header(qid=qid) + b"\xc0\x0c\x00\x01\x00\x01",
    "forward pointer": lambda qid: header(qid=qid) + b"\xc0\x20\x00\x01\x00\x01" + b"\x00" * 20,
    "label 64": lambda qid: header(qid=qid) + b"\x40" + b"a" * 64 + b"\x00\x00\x01\x00\x01",
    "qdcount 2": lambda qid: header(qd=2, qid=qid) + q + q,
    "qdcount 0": lambda qid: header(qd=0, qid=qid),
    "counts 65535": lambda qid: header(qd=65535, an=65535, ns=65535, ar=65535, qid=qid),
    "a response": lambda qid: header(flags=0x8180, qid=qid) + q,
    "opcode update": lambda qid: header(flags=0x2800, qid=qid) + q,
    "truncated question": lambda qid: header(qid=qid) + q[:7],
}
rcodes = {1: "FORMERR", 4: "NOTIMP", 5: "REFUSED"}
sel = selectors.DefaultSelector()
sent = {}  # client port -> (case, packet)
for i, (name, make) in enumerate(cases.items()):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind((client_ip, 0))
    s.setblocking(False)
    pkt = make(0x4200 + i)
    s.sendto(pkt, server)
    sent[s.getsockname()[1]] = (name, pkt)
    sel.register(s, selectors.EVENT_READ)
replies = {port: [] for port in sent}
end = time.monotonic() + 2  # a second answer, if any, arrives with the first
while time.monotonic() < end:
    for key, _ in sel.select(timeout=0.1):
        replies[key.fileobj.getsockname()[1]].append(key.fileobj.recv(65535))
def lines_by_port():
    found = {port: [] for port in sent}
    for raw in open(log, encoding="utf-8"):
        obj = json.loads(raw)
        host, _, port = (obj.get("client") or "").rpartition(":")
        if obj.get("event") == "dns" and host == client_ip and port.isdigit() and int(port) in found:
            found[int(port)].append(obj)
    return found
deadline = time.monotonic() + 10  # the log is written asynchronously
while not all(lines_by_port().values()) and time.monotonic() < deadline:
    time.sleep(0.2)
time.sleep(0.5)  # a second line for any of them would have been written by now
lines = lines_by_port()
bad = []
for port, (name, pkt) in sent.items():
    got, said = replies[port], lines[port]
    summary = [(r[3] & 0x0F) if len(r) >= 4 else r for r in got]
    print(f"{name:20} port {port}: {len(got)} answer(s) {summary}, {len(said)} line(s) "
          f"{[(l.get('verdict'), l.get('reason'), l.get('rcode')) for l in said]}")
    if len(said) != 1:
        bad.append(f"{name}: {len(said)} decision lines, not 1")
    if len(got) > 1:
        bad.append(f"{name}: {len(got)} answers, not at most 1")
    for reply in got:
        if len(reply) < 12 or (reply[3] & 0x0F) not in rcodes:
            bad.append(f"{name}: answer is not FORMERR/NOTIMP/REFUSED: {reply[:16]!r}")
        elif len(pkt) >= 2 and reply[:2] != pkt[:2]:
            bad.append(f"{name}: the answer's id differs from the query's")
        elif not reply[2] & 0x80:
            bad.append(f"{name}: the answer has no QR bit")
    if len(said) == 1:
        l = said[0]
        if l.get("verdict") != "deny":
            bad.append(f"{name}: its line says {l.get('verdict')}, not deny")
        want = rcodes.get(got[0][3] & 0x0F) if got and len(got[0]) >= 4 else None
        if (l.get("rcode") or None) != want:
            bad.append(f"{name}: its line's rcode {l.get('rcode')!r}, the client got {want!r}")
    if name == "opcode update" and [r[3] & 0x0F for r in got if len(r) >= 4] != [4]:
        bad.append(f"{name}: not answered NOTIMP (an opcode airlock does not implement)")
if bad:
    print("\n".join(bad))
    sys.exit(1)
print(len(cases), "malformed packets: one line each, at most one answer each, the two agree")
PY
expect "  and the server keeps serving" bash -c "ip netns exec $SBX dig +time=3 +tries=1 @$GW_SBX_IP www.airlock.test | grep -q 'status: NOERROR'"
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
