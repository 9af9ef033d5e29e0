#!/usr/bin/env bash
# An answer leaves from the address its query went to. airlock's DNS listeners are bound
# to wildcard addresses (0.0.0.0, [::]); a query sent to one of the host's other addresses
# (127.0.0.2 here, or a second address on an interface) must be answered from that address,
# not from whichever the route back picks: a client drops an answer from a stranger (dig:
# "reply from unexpected source"), so without this, the lookup times out. Both the answer
# made at once (a denial) and the one that waited for the upstream; IPv4 and IPv6.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
WORLD_RECORDS="ok.airlock.test 203.0.113.10
ok6.airlock.test 203.0.113.10"
WORLD_CERT_NAMES="ok.airlock.test"
source "$here/lib/world.sh"
source "$here/lib/check.sh"
world_up

world_airlock_config sandbox <<'YAML'
      - host: ok.airlock.test
      - host: ok6.airlock.test
YAML
sed -i 's|^  dns: 0.0.0.0:15053|  dns: ["0.0.0.0:15053", "[::]:15053"]|' "$W/airlock.yaml"
cat >>"$W/airlock.yaml" <<'YAML'
  - id: local
    source: 127.0.0.0/8
    policy: sandbox
  - id: local6
    source: ::1/128
    policy: sandbox
YAML
ip netns exec "$GW" sysctl -qw net.ipv6.conf.lo.disable_ipv6=0 net.ipv6.conf.all.disable_ipv6=0
ip -n "$GW" addr add 2001:db8:51::53/128 dev lo
world_start_airlock -c "$W/airlock.yaml"

# ask FROM TO NAME: dig's status line for NAME asked of TO from FROM (dig waits 3 s once).
ask() {
  ip netns exec "$GW" dig -b "$1" +time=3 +tries=1 -p 15053 @"$2" "$3" A 2>&1 |
    grep -Eo 'status: [A-Z]+|unexpected source|timed out' | head -1
}
expect "a query to 127.0.0.2 from 127.0.0.1 is answered (a denial, at once)" \
  body_is "status: NXDOMAIN" ask 127.0.0.1 127.0.0.2 denied.airlock.test
expect "  and one that waits for the upstream" body_is "status: NOERROR" ask 127.0.0.1 127.0.0.2 ok.airlock.test
expect "  the control: asked of 127.0.0.1 itself" body_is "status: NOERROR" ask 127.0.0.1 127.0.0.1 ok.airlock.test
expect "a query to [2001:db8:51::53] from [::1] is answered (a denial, at once)" \
  body_is "status: NXDOMAIN" ask ::1 2001:db8:51::53 denied.airlock.test
expect "  and one that waits for the upstream" body_is "status: NOERROR" ask ::1 2001:db8:51::53 ok6.airlock.test
expect "the upstream's answers were answers of their own, not the cache's: lines under each source's session" \
  line event=dns session=local name=ok.airlock.test client~=127.0.0.1: rcode=NOERROR 'notes=<absent>'
expect "  the IPv6 ones too (not from the cache)" line event=dns session=local6 name=ok6.airlock.test 'notes=<absent>'
check_summary
