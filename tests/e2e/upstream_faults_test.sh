#!/usr/bin/env bash
# An upstream DNS server that fails, then recovers. airlock's only upstream is a stand-in
# (lib/faulty_dns.py) whose behaviour the test switches while it runs (a mode file it reads
# per query): it black-holes, answers too late or slowly, flaps, truncates (TC=1 over UDP,
# then over TCP answers, closes mid-answer or stays silent), sends bytes that are no reply or
# a reply cut short, a reply past the size airlock asked for, SERVFAIL and REFUSED.
# For each: the sandbox's dig gets SERVFAIL, or the right answer where the fault is one a
# resolver gets past, within airlock's upstream budget (read from dns/resolver.hpp) plus a
# margin; the dns line says resolve_failed with the upstream_ note naming the fault; and the
# fault is never cached: switched back to healthy, the stand-in is asked the same name again
# at once and the sandbox gets the right answer. (lib/hostile_dns.py and its test cover
# answers that try to poison; this one covers an upstream that is merely broken.)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
WORLD_RECORDS="unused.airlock.test 203.0.113.10"  # unbound stays up, unused
WORLD_CERT_NAMES="unused.airlock.test"
source "$here/lib/world.sh"
source "$here/lib/check.sh"

# airlock's upstream budget: c-ares waits `timeout`, doubling it for each further try.
# Read from the source, so a changed default changes the bound instead of breaking it.
hdr=$here/../../dns/resolver.hpp
timeout_ms=$(sed -n 's/.*std::chrono::milliseconds timeout{\([0-9]*\)};.*/\1/p' "$hdr")
tries=$(sed -n 's/^ *int tries = \([0-9]*\);.*/\1/p' "$hdr")
[[ $timeout_ms =~ ^[0-9]+$ && $tries =~ ^[0-9]+$ ]] || { echo "FAIL no timeout/tries in $hdr"; exit 1; }
# ...provided the daemon leaves them at their defaults (it passes only the servers).
grep -q 'dns::resolver::create(p.io.get_executor(), {p.cfg.upstream_dns})' "$here/../../daemon/instance.cpp" ||
  { echo "FAIL daemon/instance.cpp no longer creates the resolver with default options: update this test"; exit 1; }
BUDGET=0
for ((i = 0; i < tries; i++)); do BUDGET=$((BUDGET + (timeout_ms << i))); done
SLACK=1500  # dig's start, ip netns exec, a sanitizer build: what the bound allows beyond it
FAST=1500   # an answer that needs no timer: the upstream said so at once

world_up
FAULTY_IP=203.0.113.57 GOOD=$ORIGIN_IP WRONG=203.0.113.77 ZONE=faulty.test
ip -n "$NET" addr add "$FAULTY_IP/24" dev "$P-n0"
FLOG=$W/faulty.log MODE=$W/faulty.mode
: >"$FLOG"
# set_mode WORDS...: what the stand-in does from its next query on (renamed in whole, so it
# never reads half a file).
set_mode() { printf '%s\n' "$*" >"$MODE.new" && mv "$MODE.new" "$MODE"; }
set_mode healthy
ip netns exec "$NET" python3 "$here/lib/faulty_dns.py" "$FLOG" "$MODE" 150 "$FAULTY_IP" "$GOOD" "$WRONG" &
WORLD_PIDS+=($!)
for _ in $(seq 100); do grep -qx ready "$FLOG" && break; sleep 0.05; done
grep -qx ready "$FLOG" || { world_log "the faulty stand-in did not start"; exit 1; }
world_wait_listen "$NET" t 53

world_airlock_config faults-sandbox <<'YAML'
      - host: "*.faulty.test"
YAML
sed -i "s/^upstream_dns: .*/upstream_dns: [$FAULTY_IP]/" "$W/airlock.yaml"
grep -q "^upstream_dns: \[$FAULTY_IP\]$" "$W/airlock.yaml" || { world_log "upstream_dns not set"; exit 1; }
world_start_airlock -c "$W/airlock.yaml"

n=0
# qdig NAME: asks airlock from the sandbox, timed; dig's output in $OUT, the time in $TOOK (ms).
# dig's own wait (8 s) is past every bound here, so a missing answer fails a check, not dig.
qdig() {
  n=$((n + 1))
  OUT=$W/dig-$n-$1.out
  local start
  start=$(ms_now)
  world_sbx dig +time=8 +tries=1 @"$GW_SBX_IP" "$1" A >"$OUT" 2>&1 || true
  TOOK=$(($(ms_now) - start))
}
ms_now() { echo $(($(date +%s%N) / 1000000)); }
dig_addresses() { awk '/^;; ANSWER SECTION:/ {a = 1; next} /^$/ {a = 0} a && $4 == "A" {print $5}' "$1"; }
status_is() { grep -q "status: $1," "$2"; }
# asked PROTO NAME MODE...: how many queries for NAME the stand-in received over PROTO in MODE.
asked() { local p=$1 name=$2; shift 2; grep -c -x -F "$p $name A $*" "$FLOG" || true; }
sent() { grep -q -x -F "sent $1 $2" "$FLOG"; }
between() { [[ $2 -le $1 && $1 -le $3 ]]; }  # between VALUE LOW HIGH

# recovers NAME: the stand-in back to healthy, the same name is asked upstream again at once
# and answered right: nothing of the fault was cached, by airlock or its resolver.
recovers() {
  local name=$1
  set_mode healthy
  qdig "$name"
  expect "  healthy again: the sandbox gets $GOOD at once (${TOOK} ms)" right_at_once
  expect "  the stand-in was asked it again, once, healthy (not answered from a cache)" \
    test "$(asked udp "$name" healthy)" -eq 1
  expect "  its dns line: NOERROR, answers [$GOOD]" line event=dns name="$name" rcode=NOERROR "answers=['$GOOD']"
  expect_not "  no dns line for it is a cache hit" line --wait 0 event=dns name="$name" 'notes~=cache_hit'
}
right_at_once() { [[ $(dig_addresses "$OUT") == "$GOOD" && $TOOK -le $FAST ]]; }

# fails LABEL MODE NOTE LOW HIGH: in MODE the sandbox gets SERVFAIL within LOW..HIGH ms, the
# line notes upstream_NOTE, and the name recovers.
fails() {
  local label=$1 mode=$2 note=$3 low=$4 high=$5 name=$1.$ZONE
  set_mode "$mode"
  qdig "$name"
  expect "$label ($mode): the sandbox gets SERVFAIL" status_is SERVFAIL "$OUT"
  expect "  within ${low}..${high} ms (took ${TOOK} ms)" between "$TOOK" "$low" "$high"
  expect "  no address reached the sandbox" test -z "$(dig_addresses "$OUT")"
  expect "  the stand-in was asked in that mode ($(asked udp "$name" "$mode") over UDP)" \
    test "$(asked udp "$name" "$mode")" -ge 1
  expect "  its dns line: resolve_failed, SERVFAIL, upstream_$note, no answers" \
    line event=dns name="$name" verdict=allow reason=resolve_failed rcode=SERVFAIL "notes~=upstream_$note" "answers=[]"
}

# survives LABEL MODE LOW HIGH: in MODE the sandbox still gets the right answer, in time.
survives() {
  local label=$1 mode=$2 low=$3 high=$4 name=$1.$ZONE
  set_mode "$mode"
  qdig "$name"
  expect "$label ($mode): the sandbox gets $GOOD and nothing else" body_is "$GOOD" dig_addresses "$OUT"
  expect "  within ${low}..${high} ms (took ${TOOK} ms)" between "$TOOK" "$low" "$high"
  expect "  its dns line: NOERROR, answers [$GOOD], no upstream_ note" \
    line --count 1 event=dns name="$name" rcode=NOERROR "answers=['$GOOD']" reason=host_allowed
  expect_not "  (no upstream_ note)" line --wait 0 event=dns name="$name" 'notes~=upstream_'
}

echo "airlock's upstream budget (dns/resolver.hpp): ${timeout_ms} ms doubling over $tries tries = $BUDGET ms"

# 0. The control: healthy, answered and cached (a second ask is a cache hit, not asked again).
qdig good.$ZONE
expect "good (healthy, the control): the sandbox gets $GOOD (${TOOK} ms)" body_is "$GOOD" dig_addresses "$OUT"
qdig good.$ZONE
expect "  asked again: answered from airlock's cache, the stand-in asked once" \
  test "$(asked udp good.$ZONE healthy)" -eq 1
expect "  (so a cache hit is visible: its line says cache_hit)" line event=dns name=good.$ZONE 'notes~=cache_hit'

# 1. Nothing comes back: SERVFAIL once the whole budget is spent, each try sent.
fails blackhole blackhole timeout $((BUDGET - 300)) $((BUDGET + SLACK))
expect "  every try of the budget reached the stand-in ($tries)" test "$(asked udp blackhole.$ZONE blackhole)" -eq "$tries"
recovers blackhole.$ZONE

# 2. Slower than the budget: SERVFAIL, and the answer arriving after it (WRONG, TTL 300) is
# not taken: once it has arrived, the name is asked upstream again and gets GOOD.
late=$((BUDGET + 500))
fails late "late $late" timeout $((BUDGET - 300)) $((BUDGET + SLACK))
for _ in $(seq 60); do
  [[ $(grep -c -x -F "sent late.$ZONE wrong-after-${late}ms" "$FLOG" || true) -ge $tries ]] && break
  sleep 0.1
done
expect "  the late answers were sent after it (one a try)" \
  test "$(grep -c -x -F "sent late.$ZONE wrong-after-${late}ms" "$FLOG" || true)" -eq "$tries"
recovers late.$ZONE

# 3. Slow within the budget: within the first try's wait, and past it (the retry goes out;
# whichever answer comes first, it is the right one).
survives slow "slow 400" 400 $((timeout_ms + SLACK))
expect "  asked once: the first try's wait was not over" test "$(asked udp slow.$ZONE slow 400)" -eq 1
recovers slow.$ZONE
slow2=$((timeout_ms + 500))
survives slower "slow $slow2" "$slow2" $((BUDGET + SLACK))
expect "  asked again when the first try's wait was over" test "$(asked udp slower.$ZONE slow $slow2)" -ge 2
recovers slower.$ZONE

# 4. Flapping: two queries answered SERVFAIL, two answered, and so on. Five asks of one
# name get SERVFAIL or the right answer, each at once, and an answer comes after a SERVFAIL:
# a SERVFAIL is never remembered. (How many asks a SERVFAIL costs is c-ares's retry policy,
# not checked here.)
set_mode flap
flap_got=() flap_slow=()
for i in 1 2 3 4 5; do
  qdig flap.$ZONE
  if status_is SERVFAIL "$OUT"; then flap_got+=(SERVFAIL); else flap_got+=("$(dig_addresses "$OUT" | paste -sd+)"); fi
  [[ $TOOK -le $FAST ]] || flap_slow+=("ask $i: ${TOOK} ms")
done
flap_seq=$(IFS=,; echo "${flap_got[*]}")
flap_fail=0
for got in "${flap_got[@]}"; do [[ $got != SERVFAIL ]] || flap_fail=$((flap_fail + 1)); done
expect "flap: each ask got SERVFAIL or $GOOD (got $flap_seq)" \
  bash -c "[[ ',$flap_seq,' =~ ^(,(SERVFAIL|${GOOD//./\\.}))+,\$ ]]"
expect "  each at once (${flap_slow[*]:-all within $FAST ms})" test ${#flap_slow[@]} -eq 0
expect "  an answer came after a SERVFAIL" bash -c "[[ '$flap_seq' == *SERVFAIL*,$GOOD* ]]"
expect "  the stand-in was asked each time ($(asked udp flap.$ZONE flap) asks for 5)" \
  test "$(asked udp flap.$ZONE flap)" -ge 5
expect "  the lines agree: $flap_fail SERVFAIL upstream_server_failure, $((5 - flap_fail)) NOERROR [$GOOD]" \
  line --count "$flap_fail" event=dns name=flap.$ZONE rcode=SERVFAIL reason=resolve_failed notes~=upstream_server_failure
expect "  (the NOERROR ones)" line --count $((5 - flap_fail)) event=dns name=flap.$ZONE rcode=NOERROR "answers=['$GOOD']"
expect_not "  none a cache hit" line --wait 0 event=dns name=flap.$ZONE notes~=cache_hit
recovers flap.$ZONE

# 5. Truncation. TC=1 over UDP (carrying WRONG) is not used: the question goes again over
# TCP. There the right answer is taken; half an answer then a close is SERVFAIL at once (the
# connection failed: upstream_unreachable), silence is SERVFAIL when the try's wait is over.
survives tc tc 0 $FAST
expect "  the stand-in sent TC=1 over UDP, then was asked over TCP and answered there" bash -c "
  grep -q -x -F 'sent tc.$ZONE wrong-truncated' '$FLOG' && grep -q -x -F 'tcp tc.$ZONE A tc' '$FLOG' &&
    grep -q -x -F 'sent tc.$ZONE tcp-right' '$FLOG'"
recovers tc.$ZONE
fails tc-cut tc-cut unreachable 0 $FAST
expect "  asked over TCP, where it sent half an answer and closed" \
  bash -c "grep -q -x -F 'tcp tc-cut.$ZONE A tc-cut' '$FLOG' && grep -q -x -F 'sent tc-cut.$ZONE tcp-half-then-close' '$FLOG'"
recovers tc-cut.$ZONE
fails tc-silent tc-silent timeout 0 $((BUDGET + SLACK))
expect "  asked over TCP, where it never answered" \
  bash -c "grep -q -x -F 'tcp tc-silent.$ZONE A tc-silent' '$FLOG' && grep -q -x -F 'sent tc-silent.$ZONE tcp-nothing' '$FLOG'"
recovers tc-silent.$ZONE

# 6. Bytes that are no reply (too short; a question running past the end) match no query:
# as if nothing came, SERVFAIL when the budget is spent. A reply with the right TXID and
# question cut short in its answers is refused whole at once (bad_answer).
fails garbage garbage timeout $((BUDGET - 300)) $((BUDGET + SLACK))
expect "  the stand-in sent both kinds of garbage for each try" bash -c "
  test \$(grep -c -x -F 'sent garbage.$ZONE garbage-3-bytes' '$FLOG') -eq $tries &&
  test \$(grep -c -x -F 'sent garbage.$ZONE garbage-runaway-name' '$FLOG') -eq $tries"
recovers garbage.$ZONE
fails mangled mangled bad_answer 0 $FAST
expect "  the stand-in sent the right address, then a record cut short" sent mangled.$ZONE right-then-cut-record
recovers mangled.$ZONE

# 7. A UDP reply far past the 1,232 bytes airlock asked for (250 records of WRONG, TC=0) is
# taken as truncated: asked again over TCP, answered right there.
survives oversize oversize 0 $FAST
expect "  the stand-in sent over 4,000 bytes over UDP, then was asked over TCP" \
  bash -c "grep -q -E '^sent oversize.$ZONE wrong-oversize-[0-9]{4}-bytes\$' '$FLOG' &&
    grep -q -x -F 'tcp oversize.$ZONE A oversize' '$FLOG' && grep -q -x -F 'sent oversize.$ZONE tcp-right' '$FLOG'"
recovers oversize.$ZONE

# 8. The upstream says it failed, or will not answer: SERVFAIL at once, noted as the
# upstream's failure (server_failure), not as an upstream that could not be reached: it was,
# and it answered. (REFUSED has no note of its own; server_failure is the nearest.)
fails servfail servfail server_failure 0 $FAST
recovers servfail.$ZONE
fails refused refused server_failure 0 $FAST
recovers refused.$ZONE

# 9. Over everything: WRONG (only ever in a fault) never reached the sandbox or a line;
# every query the stand-in got was one it could read; airlock is up.
expect "no dig output ever showed $WRONG (of $n)" bash -c "! grep -l '$WRONG' $W/dig-*.out"
expect "no dns line's answers ever held $WRONG" bash -c "! grep '\"event\":\"dns\"' '$W/decisions.jsonl' | grep -q '$WRONG'"
expect "the stand-in could read every query it got" bash -c "! grep -q unparsable '$FLOG'"
expect "airlock is still running" kill -0 "$AIRLOCK_PID"

check_summary
