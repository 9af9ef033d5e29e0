#!/usr/bin/env bash
# SIGHUP: a good policy file is swapped in whole (decisions name the new version), a bad
# one is refused with FILE:LINE:COL and the running policy stays, and the decision log is
# reopened so it can be rotated. Reloads every 100 ms under load (ROBUSTNESS E4) drop no
# relayed connection and no DNS answer. Real unbound upstream, real dig, in namespaces.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
WORLD_RECORDS="allowed.airlock.test 203.0.113.10
later.airlock.test 203.0.113.10"
WORLD_CERT_NAMES="allowed.airlock.test"
source "$here/lib/world.sh"
source "$here/lib/check.sh"
world_up

write_policy() { for h in "$@"; do echo "      - host: $h"; done | world_airlock_config reload-sandbox; }
write_policy allowed.airlock.test
world_start_airlock -c "$W/airlock.yaml"

status_of() { world_sbx dig +time=3 +tries=1 @"$GW_SBX_IP" "$1" | sed -n 's/.*status: \([A-Z]*\).*/\1/p'; }
version_of() { line event=dns name="$1" | tail -1 | python3 -c 'import json,sys; print(json.loads(sys.stdin.read())["policy_version"])'; }
hup_and_wait() {  # sends SIGHUP and waits (bounded) for airlock to report the outcome
  local before
  before=$(grep -c 'reload' "$W/airlock.stderr" || true)
  kill -HUP "$AIRLOCK_PID"
  for _ in $(seq 100); do
    [[ $(grep -c 'reload' "$W/airlock.stderr" || true) -gt $before ]] && return 0
    sleep 0.05
  done
  return 1
}

expect "before reload: later.airlock.test is denied" test "$(status_of later.airlock.test)" = NXDOMAIN
v1=$(version_of later.airlock.test)

write_policy allowed.airlock.test later.airlock.test
expect "SIGHUP with a good file is reported" hup_and_wait
expect "  the new policy is in force: later.airlock.test resolves" test "$(status_of later.airlock.test)" = NOERROR
v2=$(version_of later.airlock.test)
expect "  its decision names the new version ($v1 -> $v2)" test -n "$v2" -a "$v1" != "$v2"

printf 'version: 1\npolicies:\n  sandbox:\n    allow:\n      - hots: x\n' >"$W/airlock.yaml"
expect "SIGHUP with a bad file is reported" hup_and_wait
expect "  with FILE:LINE:COL" grep -q "airlock.yaml:5:9: unknown key 'hots'" "$W/airlock.stderr"
expect "  and the running policy stays" test "$(status_of later.airlock.test)" = NOERROR
expect "  its decisions still name version $v2" test "$(version_of later.airlock.test)" = "$v2"

write_policy allowed.airlock.test
mv "$W/decisions.jsonl" "$W/decisions.jsonl.1"
expect "SIGHUP after rotation" hup_and_wait
status_of allowed.airlock.test >/dev/null
expect "  the log is reopened: new decisions land in a new file" line event=dns name=allowed.airlock.test
expect "  and the rotated file kept the old ones" grep -q later.airlock.test "$W/decisions.jsonl.1"

# Reloads under load (ROBUSTNESS E4): 40 SIGHUPs 100 ms apart, alternating two policies (one
# also allows later.airlock.test), one of them with a bad file, while 10 downloads are
# relayed and the sandbox asks 150 DNS queries a second.
write_policy allowed.airlock.test && cp "$W/airlock.yaml" "$W/a.yaml"
write_policy allowed.airlock.test later.airlock.test && cp "$W/airlock.yaml" "$W/b.yaml"
printf 'version: 1\npolicies:\n  sandbox:\n    allow:\n      - hots: x\n' >"$W/bad.yaml"
: >"$W/decisions.jsonl"
reloads_before=$(grep -c 'reloaded policy' "$W/airlock.stderr" || true)
fails_before=$(grep -c 'reload failed' "$W/airlock.stderr" || true)
located_before=$(grep -c "airlock.yaml:5:9: unknown key 'hots'" "$W/airlock.stderr" || true)
downloads=()
for i in $(seq 10); do
  sbx_curl --max-time 30 --limit-rate 1M -r 0-2999999 --resolve "allowed.airlock.test:443:$ORIGIN_IP" \
    -o "$W/part.$i" https://allowed.airlock.test/big.bin &
  downloads+=($!)
done
world_sbx timeout 20 python3 -c '
import random, socket, struct, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(2)
name = b"".join(bytes([len(p)]) + p for p in b"allowed.airlock.test".split(b".")) + b"\0"
codes, start = {}, time.monotonic()
for i in range(int(sys.argv[2])):
    qid = random.randrange(65536)
    s.sendto(struct.pack(">HHHHHH", qid, 0x0100, 1, 0, 0, 0) + name + struct.pack(">HH", 1, 1), (sys.argv[1], 53))
    try:
        while True:
            reply = s.recv(512)
            if struct.unpack(">H", reply[:2])[0] == qid:
                break
        rcode = reply[3] & 0xF
    except socket.timeout:
        rcode = "timeout"
    codes[rcode] = codes.get(rcode, 0) + 1
    time.sleep(max(0, start + (i + 1) / 150 - time.monotonic()))
print(" ".join("%s:%d" % kv for kv in sorted(codes.items(), key=str)))' "$GW_SBX_IP" 750 >"$W/dns-under-reload" &
dns_load=$!
for i in $(seq 40); do
  if ((i == 20)); then src=bad; elif ((i % 2)); then src=a; else src=b; fi
  cp "$W/$src.yaml" "$W/next.yaml" && mv "$W/next.yaml" "$W/airlock.yaml"  # a reload never reads half a file
  kill -HUP "$AIRLOCK_PID"
  sleep 0.1
done
dropped=0
for pid in "${downloads[@]}"; do wait "$pid" || dropped=$((dropped + 1)); done
wait "$dns_load" || true
for _ in $(seq 100); do
  (($(grep -c 'reloaded policy\|reload failed' "$W/airlock.stderr") >= reloads_before + fails_before + 40)) && break
  sleep 0.05
done
expect "40 reloads in 4 s under load: 39 taken" \
  test "$(($(grep -c 'reloaded policy' "$W/airlock.stderr") - reloads_before))" -eq 39
expect "  the bad one refused" test "$(($(grep -c 'reload failed' "$W/airlock.stderr") - fails_before))" -eq 1
expect "  with FILE:LINE:COL" \
  test "$(($(grep -c "airlock.yaml:5:9: unknown key 'hots'" "$W/airlock.stderr") - located_before))" -eq 1
expect "  no relayed download dropped: all 10 whole" python3 -c '
import os, sys
sizes = [os.path.getsize(os.path.join(sys.argv[1], "part.%d" % i)) for i in range(1, 11)]
print(sizes, file=sys.stderr)
sys.exit(0 if int(sys.argv[2]) == 0 and all(s == 3000000 for s in sizes) else 1)' "$W" "$dropped"
echo "  DNS under reloads: $(cat "$W/dns-under-reload")"
expect "  no DNS query dropped: all 750 answered NOERROR" test "$(cat "$W/dns-under-reload")" = "0:750"
expect "  every decision names one of the two policies' versions" python3 -c '
import json, re, sys
versions = set(re.findall(r"reloaded policy (\S+)", open(sys.argv[2]).read()))
lines = [json.loads(l) for l in open(sys.argv[1])]
seen = {l.get("policy_version") for l in lines}
print(len(lines), "lines, versions", sorted(seen), "of", sorted(versions), file=sys.stderr)
sys.exit(0 if lines and seen <= versions and len(versions) == 2 else 1)' "$W/decisions.jsonl" "$W/airlock.stderr"

check_summary
