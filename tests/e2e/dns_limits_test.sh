#!/usr/bin/env bash
# The dns: section in force: denials answered REFUSED when configured, the refused query types
# (never asked upstream, as its query log shows), and the per-session query rate (a flood is
# refused with limit_exceeded, then the session recovers).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
WORLD_RECORDS="ok.airlock.test 203.0.113.10
ok.airlock.test TXT \"hello\""
WORLD_CERT_NAMES="ok.airlock.test"
source "$here/lib/world.sh"
source "$here/lib/check.sh"
world_up
world_airlock_config limits-sandbox <<'YAML'
      - host: ok.airlock.test
YAML
printf 'dns:\n  deny_with: refused\n  refused_types: [TXT, "NULL", TYPE65280]\n  queries_per_second: 5\n  burst: 20\n' >>"$W/airlock.yaml"
world_start_airlock -c "$W/airlock.yaml"
status_of() { world_sbx dig +time=3 +tries=1 @"$GW_SBX_IP" "$@" | sed -n 's/.*status: \([A-Z]*\).*/\1/p'; }

expect "an allowed name resolves" test "$(status_of ok.airlock.test)" = NOERROR
expect "a denied name gets REFUSED (deny_with: refused)" test "$(status_of nope.airlock.test)" = REFUSED
expect "  logged with its reason" line event=dns name=nope.airlock.test verdict=deny reason=host_not_allowed rcode=REFUSED
# Each configured refused type (by name, and as TYPE<n>) is refused even for an allowed name,
# and never asked upstream: the upstream's query log, live (it shows the MX query asked
# after them, the control), has only the A and the MX for the name.
for t in TXT NULL TYPE65280; do
  expect "a refused type ($t) is refused even for an allowed name" test "$(status_of ok.airlock.test $t)" = REFUSED
done
expect "  logged as dns_type_refused (TXT)" line event=dns name=ok.airlock.test qtype=TXT reason=dns_type_refused
expect "  logged as dns_type_refused (NULL is TYPE10)" line event=dns name=ok.airlock.test qtype=TYPE10 reason=dns_type_refused
expect "  logged as dns_type_refused (TYPE65280)" line event=dns name=ok.airlock.test qtype=TYPE65280 reason=dns_type_refused
expect "a type not refused (MX) goes upstream (the control)" test "$(status_of ok.airlock.test MX)" = NOERROR
upstream_asked() {  # "TYPE CLASS" of each query for NAME in the upstream's query log, sorted
  awk -v n="$(tr A-Z a-z <<<"$1.")" 'tolower($(NF-2)) == n { print $(NF-1), $NF }' "$W/unbound.log" | sort
}
expect "  the upstream saw the A and the MX for the name, none of the refused types" \
  body_is $'A IN\nMX IN' upstream_asked ok.airlock.test

# 60 queries at once against a burst of 20 and 5 per second: most are refused.
expect "a flood past the session's rate is refused" world_sbx timeout 20 python3 - "$GW_SBX_IP" <<'PY'
import socket, struct, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(2)
q = b"\x02ok\x07airlock\x04test\x00\x00\x01\x00\x01"
for i in range(60):
    s.sendto(struct.pack(">HHHHHH", i, 0x0100, 1, 0, 0, 0) + q, (sys.argv[1], 53))
codes = {}
deadline = time.monotonic() + 5
while sum(codes.values()) < 60 and time.monotonic() < deadline:
    try:
        reply, _ = s.recvfrom(4096)
    except socket.timeout:
        break
    codes[reply[3] & 0x0F] = codes.get(reply[3] & 0x0F, 0) + 1
print(codes)
assert codes.get(5, 0) >= 30, codes   # REFUSED
assert codes.get(0, 0) >= 1, codes    # the burst got through
PY
expect "  logged as limit_exceeded" line event=dns reason=limit_exceeded rcode=REFUSED
sleep 1.5
expect "  and the session recovers at the configured rate" test "$(status_of ok.airlock.test)" = NOERROR
check_summary
