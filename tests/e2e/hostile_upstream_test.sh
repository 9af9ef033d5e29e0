#!/usr/bin/env bash
# Upstream DNS cannot poison the name table. airlock's only upstream is a hostile stand-in
# (lib/hostile_dns.py) that, for each name under *.hostile.test (allowed on 2230), sends a
# poison address ($ATTACKER_IP) in a way a resolver must refuse: under a wrong TXID, from a
# wrong source port or address, for another question, beside the answer for names nobody
# asked, with TC=1 (the right answer then comes over TCP), too late, never, or in a broken
# message.
# The sandbox's dig must only ever see the right address ($ORIGIN_IP) or SERVFAIL (within
# the resolver's 3 s), the dns lines must never list the poison, and a name-less connection
# to the poison address must stay unnamed (no_name) while one to the right address is named
# from the DNS answers (the control: the mechanism the check relies on works).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
WORLD_RECORDS="unused.airlock.test 203.0.113.10"  # unbound stays up, unused
WORLD_CERT_NAMES="good.hostile.test"
source "$here/lib/world.sh"
source "$here/lib/check.sh"
world_up

HOSTILE_IP=203.0.113.54 OTHER_IP=203.0.113.55 ZONE=hostile.test
for a in $HOSTILE_IP $OTHER_IP; do ip -n "$NET" addr add "$a/24" dev "$P-n0"; done
HLOG=$W/hostile.log FAR=$W/far.log
: >"$HLOG"
: >"$FAR"
ip netns exec "$NET" python3 "$here/lib/hostile_dns.py" "$HLOG" 120 $HOSTILE_IP $OTHER_IP $ORIGIN_IP $ATTACKER_IP &
WORLD_PIDS+=($!)
ip netns exec "$NET" python3 "$here/lib/far_side.py" "$FAR" 120 $ORIGIN_IP:2230 $ATTACKER_IP:2230 &
WORLD_PIDS+=($!)
for _ in $(seq 100); do grep -qx ready "$HLOG" && break; sleep 0.05; done
grep -qx ready "$HLOG" || { world_log "the hostile stand-in did not start"; exit 1; }
world_wait_listen "$NET" t 2230

world_airlock_config hostile-sandbox <<'YAML'
      - host: "*.hostile.test"
        ports: [80, 443, 2230]
YAML
sed -i "s/^upstream_dns: .*/upstream_dns: [$HOSTILE_IP]/" "$W/airlock.yaml"
grep -q "^upstream_dns: \[$HOSTILE_IP\]$" "$W/airlock.yaml" || { world_log "upstream_dns not set"; exit 1; }
world_start_airlock -c "$W/airlock.yaml"

# qdig NAME: asks airlock from the sandbox; dig's output goes to $W/dig-N-NAME.out.
n=0
qdig() {
  n=$((n + 1))
  OUT=$W/dig-$n-$1.out
  world_sbx dig +time=8 +tries=1 @"$GW_SBX_IP" "$1" A >"$OUT" 2>&1 || true
}
# The A addresses in a dig output's answer section, one a line.
dig_addresses() { awk '/^;; ANSWER SECTION:/ {a = 1; next} /^$/ {a = 0} a && $4 == "A" {print $5}' "$1"; }
status_is() { grep -q "status: $1," "$2"; }
ms_now() { echo $(( $(date +%s%N) / 1000000 )); }
sent() { grep -q "^sent $1 $2\$" "$HLOG"; }
received() { grep -c "^$1 $2 A\$" "$HLOG" || true; }
# A poison from another port or address is sent from a socket connected to airlock's: the
# gateway's ICMP port unreachable comes back to it, so the poison did arrive, and no socket
# there took it.
gateway_refused() {
  for _ in $(seq 30); do grep -q "^gateway $1 " "$HLOG" && break; sleep 0.1; done
  grep "^gateway $1 " "$HLOG"
  grep -q "^gateway $1 refused\$" "$HLOG"
}

# 1. Answers to refuse arrive first, then the right one: only the right one is used.
clean_answer() {
  local name=$1.$ZONE label=$1 what=$2
  qdig "$name"
  expect "$label: the stand-in sent $what before the right answer" \
    bash -c "grep '^sent $name ' '$HLOG' | head -1 | grep -q ' $what\$'"
  expect "  the sandbox got $ORIGIN_IP and nothing else" body_is "$ORIGIN_IP" dig_addresses "$OUT"
  expect "  its dns line: NOERROR, answers [$ORIGIN_IP] only" \
    line event=dns name="$name" verdict=allow rcode=NOERROR "answers=['$ORIGIN_IP']"
}
qdig good.$ZONE
expect "good (the control): the sandbox got $ORIGIN_IP" body_is "$ORIGIN_IP" dig_addresses "$OUT"
expect "  its dns line lists it" line event=dns name=good.$ZONE rcode=NOERROR "answers=['$ORIGIN_IP']"
clean_answer wrongid poison-wrong-txid
clean_answer wrongport poison-wrong-port
expect "  the poison reached the gateway, where no socket took it" gateway_refused wrongport.$ZONE
clean_answer wrongaddr poison-wrong-address
expect "  the poison reached the gateway, where no socket took it" gateway_refused wrongaddr.$ZONE
clean_answer otherq poison-other-name
expect "  and the poison for its name under another type" sent otherq.$ZONE poison-other-type

# 2. The right answer carrying the poison for names nobody asked: filtered, and not learnt.
qdig extra.$ZONE
expect "extra: the stand-in sent the right answer with the poison beside it" sent extra.$ZONE right-with-poison-beside
expect "  the sandbox got $ORIGIN_IP and nothing else" body_is "$ORIGIN_IP" dig_addresses "$OUT"
expect "  with no authority or additional records" \
  bash -c "grep -q 'AUTHORITY: 0, ADDITIONAL: 1' '$OUT' && ! grep -q '$ATTACKER_IP' '$OUT'"
expect "  its dns line: answers [$ORIGIN_IP], the out-of-chain record removed" \
  line event=dns name=extra.$ZONE rcode=NOERROR "answers=['$ORIGIN_IP']" 'notes~=removed_1_out_of_chain_or_malformed'
for other in victim ns; do
  qdig $other.$ZONE
  expect "  $other.$ZONE, named beside it, is asked upstream and gets NXDOMAIN, not the poison" \
    bash -c "grep -q 'status: NXDOMAIN,' '$OUT' && grep -q '^udp $other.$ZONE A\$' '$HLOG'"
done

# 3. TC=1 over UDP: the answer is not used, the question is asked again over TCP.
qdig tc.$ZONE
expect "tc: the stand-in sent the poison with TC=1 over UDP" sent tc.$ZONE poison-truncated
expect "  then was asked over TCP" grep -q "^tcp tc.$ZONE A\$" "$HLOG"
expect "  and sent the poison under a wrong TXID there first" sent tc.$ZONE tcp-poison-wrong-txid
expect "  the sandbox got $ORIGIN_IP and nothing else" body_is "$ORIGIN_IP" dig_addresses "$OUT"
expect "  its dns line: NOERROR, answers [$ORIGIN_IP] only" \
  line event=dns name=tc.$ZONE rcode=NOERROR "answers=['$ORIGIN_IP']"

# 4. Nothing valid arrives in time: SERVFAIL within the resolver's budget (1 s + 2 s).
servfail_in_time() {  # servfail_in_time LABEL: asked once, answered SERVFAIL in time, logged so
  local start elapsed
  start=$(ms_now)
  qdig "$1.$ZONE"
  elapsed=$(($(ms_now) - start))
  expect "$1: SERVFAIL" status_is SERVFAIL "$OUT"
  expect "  within 4.5 s (took ${elapsed} ms)" test "$elapsed" -le 4500
  expect "  logged resolve_failed, upstream_timeout" \
    line event=dns name="$1.$ZONE" verdict=allow reason=resolve_failed rcode=SERVFAIL 'notes~=upstream_timeout'
}
servfail_in_time slow
servfail_in_time silent
expect "  the stand-in was asked and never answered" \
  bash -c "grep -q '^udp silent.$ZONE A\$' '$HLOG' && ! grep -q '^sent silent.$ZONE [^n]' '$HLOG'"
# The late poison (one per try) has arrived by now; asking again must not find it cached.
asked=$(received udp slow.$ZONE)
for _ in $(seq 80); do
  [[ $(grep -c "^sent slow.$ZONE poison-late\$" "$HLOG" || true) -ge $asked ]] && break
  sleep 0.1
done
expect "slow: the stand-in sent its late poison for each of the $asked tries" \
  test "$asked" -ge 1 -a "$(grep -c "^sent slow.$ZONE poison-late\$" "$HLOG" || true)" -eq "$asked"
sleep 0.3
qdig slow.$ZONE
expect "  asked again afterwards: SERVFAIL again, not the late poison" status_is SERVFAIL "$OUT"
expect "  it went upstream again (nothing was cached)" test "$(received udp slow.$ZONE)" -gt "$asked"
expect "  both its lines say SERVFAIL, neither a cache hit" \
  line --count 2 event=dns name=slow.$ZONE rcode=SERVFAIL "answers=[]"
expect_not "  (no cache_hit)" line --wait 0 event=dns name=slow.$ZONE 'notes~=cache_hit'

# 5. Answers under the right TXID and question, carrying the poison, but broken (a record cut
# short, an owner name that points at itself, an A record of 5 bytes, QR=0): c-ares hands them
# over, airlock's parser refuses them whole: SERVFAIL at once, nothing taken from them.
for bad in malformed:poison-then-cut-record loop:poison-pointer-loop badlen:poison-rdlength-5 \
  notreply:poison-without-qr; do
  label=${bad%%:*} what=${bad#*:}
  start=$(ms_now)
  qdig $label.$ZONE
  elapsed=$(($(ms_now) - start))
  expect "$label: the stand-in sent $what under the right TXID" sent $label.$ZONE "$what"
  expect "  the sandbox got SERVFAIL, no address (took ${elapsed} ms)" \
    bash -c "grep -q 'status: SERVFAIL,' '$OUT' && test -z \"\$(awk '/ANSWER SECTION/' '$OUT')\""
  expect "  logged resolve_failed, upstream_bad_answer, no answers" \
    line event=dns name=$label.$ZONE reason=resolve_failed rcode=SERVFAIL 'notes~=upstream_bad_answer' "answers=[]"
done

# 6. The name table: the poison address was never recorded for this session.
expect "a name-less connection to $ORIGIN_IP:2230 (a right answer's address) reaches it" \
  body_is "far:SSH-2.0-sandbox" world_sbx timeout 15 python3 "$here/lib/speak.py" $ORIGIN_IP 2230 opaque
expect "  allowed, named from the DNS answers (the control)" \
  line event=connect dst=$ORIGIN_IP:2230 verdict=allow reason=host_allowed 'notes~=name_from_dns_answer'
expect "a name-less connection to the poison address $ATTACKER_IP:2230 gets nothing" \
  bash -c "[[ \$(ip netns exec $SBX timeout 15 python3 $here/lib/speak.py $ATTACKER_IP 2230 opaque) =~ ^(reset|closed)$ ]]"
expect "  denied no_name: no answer ever named the address" \
  line event=connect dst=$ATTACKER_IP:2230 verdict=deny reason=no_name name=null
expect_not "  and not named from DNS answers" line --wait 0 event=connect dst=$ATTACKER_IP:2230 'notes~=name_from_dns_answer'
expect "  nothing reached the poison address (the control's bytes did reach $ORIGIN_IP)" \
  bash -c "! grep -q '^$ATTACKER_IP:2230 ' '$FAR' && grep -q '^$ORIGIN_IP:2230 ' '$FAR'"

# 7. Over everything: the poison was never handed out, nor logged as an answer.
expect "no dns line's answers ever held $ATTACKER_IP (of $n queries)" python3 - "$W/decisions.jsonl" "$ATTACKER_IP" "$n" <<'PY'
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1], encoding="utf-8")]
dns = [l for l in lines if l.get("event") == "dns"]
bad = [l for l in dns if sys.argv[2] in json.dumps(l.get("answers"))]
assert len(dns) >= int(sys.argv[3]), f"only {len(dns)} dns lines"
assert not bad, bad
print(len(dns), "dns lines, none with the poison")
PY
expect "no dig output ever showed $ATTACKER_IP" bash -c "! grep -l '$ATTACKER_IP' $W/dig-*.out"
expect "airlock is still running" kill -0 "$AIRLOCK_PID"

check_summary
