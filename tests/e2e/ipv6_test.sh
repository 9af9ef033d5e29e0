#!/usr/bin/env bash
# IPv6 is handled exactly like IPv4: a sandbox with an IPv6 route is redirected by the same
# inet table, airlock reads the original destination with IP6T_SO_ORIGINAL_DST, and every
# decision (names, SNI spoofing, no SNI, Host, opaque TCP named by AAAA answers) comes out
# the same. Then all of it again through TPROXY (IPV6_TRANSPARENT listener, destination
# read with getsockname). Documentation prefix 2001:db8::/32, inside the test's own
# namespaces only.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
WORLD_IPV6=1
WORLD_RECORDS="listed.airlock.test 203.0.113.10
listed.airlock.test AAAA 2001:db8:113::10
unlisted.airlock.test 203.0.113.10
unlisted.airlock.test AAAA 2001:db8:113::10
ssh.airlock.test AAAA 2001:db8:113::10
unrouted6.airlock.test 203.0.113.10
unrouted6.airlock.test AAAA 2001:db8:99::10"
WORLD_CERT_NAMES="listed.airlock.test unlisted.airlock.test unrouted6.airlock.test"
source "$here/lib/world.sh"
source "$here/lib/check.sh"
world_up

world_airlock_config v4-sandbox <<'YAML'
      - host: listed.airlock.test
      - host: unrouted6.airlock.test
      - host: ssh.airlock.test
        ports: [22]
YAML
sed -i 's|^  proxy: 0.0.0.0:15001|  proxy: ["0.0.0.0:15001", "[::]:15001"]|; s|^  dns: 0.0.0.0:15053|  dns: ["0.0.0.0:15053", "[::]:15053"]|' \
  "$W/airlock.yaml"
printf '  - id: v6-sandbox\n    source: 2001:db8:51::/64\n    policy: sandbox\n' >>"$W/airlock.yaml"
world_start_airlock -c "$W/airlock.yaml"
world_tcp_banner "$ORIGIN_IP6" 22
world_tcp_banner "$ATTACKER_IP6" 22

aaaa() { world_sbx dig +time=3 +tries=1 +short AAAA @"$GW_SBX_IP6" "$1"; }

named_checks() {  # named_checks PHASE: HTTPS and HTTP over IPv6, judged by name
  expect "$1HTTPS over IPv6 to an allowed name works" body_is "origin says hello to listed.airlock.test" \
    sbx_curl -6 https://listed.airlock.test/
  expect "  its line: IPv6 endpoints, the destination as the client addressed it, connected to" \
    line event=connect session=v6-sandbox proto=tls name=listed.airlock.test verdict=allow reason=host_allowed \
    'client~=[2001:db8:51::2]:' "dst=[$ORIGIN_IP6]:443" "upstream=[$ORIGIN_IP6]:443"
  expect_not "$1HTTPS over IPv6 to an unlisted name is refused" \
    sbx_curl -6 --resolve "unlisted.airlock.test:443:[$ORIGIN_IP6]" https://unlisted.airlock.test/
  expect "  logged as host_not_allowed" line event=connect session=v6-sandbox name=unlisted.airlock.test \
    verdict=deny reason=host_not_allowed
  expect "$1an allowed SNI aimed at the attacker's IPv6 address reaches only the real host" \
    body_is "origin says hello to listed.airlock.test" \
    sbx_curl -6 --resolve "listed.airlock.test:443:[$ATTACKER_IP6]" https://listed.airlock.test/
  expect "  logged as dst_mismatch, upstream the real host over IPv6" line event=connect session=v6-sandbox \
    name=listed.airlock.test reason=dst_mismatch "dst=[$ATTACKER_IP6]:443" "upstream=[$ORIGIN_IP6]:443"
  expect_not "$1no SNI to a bare IPv6 address is refused" sbx_curl -6 -k "https://[$ATTACKER_IP6]/"
  expect "  logged as no_name" line event=connect session=v6-sandbox "dst=[$ATTACKER_IP6]:443" reason=no_name
  expect "$1plain HTTP over IPv6 with an unlisted Host gets 403" \
    bash -c '[[ $(ip netns exec "$0" curl -s -o /dev/null -w "%{http_code}" --max-time 10 -H "Host: unlisted.airlock.test" "http://[$1]/") == 403 ]]' \
    "$SBX" "$ORIGIN_IP6"
}

opaque_checks() {  # opaque_checks PHASE: raw TCP judged by the IPv6 answers this airlock gave
  expect "$1the AAAA of a name allowed for opaque TCP is answered" body_is 2001:db8:113::10 aaaa ssh.airlock.test
  expect "$1opaque TCP to an address from an allowed name's AAAA answer works" \
    body_is "SSH-2.0-airlock-e2e" world_tcp_probe "$ORIGIN_IP6" 22
  expect "  its line: tcp, named from the DNS answer" line event=connect session=v6-sandbox proto=tcp \
    name=ssh.airlock.test verdict=allow "dst=[$ORIGIN_IP6]:22" "upstream=[$ORIGIN_IP6]:22"
  expect_not "$1opaque TCP to an IPv6 address no DNS answer gave out is refused" world_tcp_probe "$ATTACKER_IP6" 22
  expect "  its line: deny no_name" line event=connect session=v6-sandbox proto=tcp "dst=[$ATTACKER_IP6]:22" \
    verdict=deny reason=no_name
  expect_not "$1opaque TCP to that address on a port the name does not list is refused" \
    world_tcp_probe "$ORIGIN_IP6" 2222
  expect "  its line: deny" line event=connect session=v6-sandbox proto=tcp "dst=[$ORIGIN_IP6]:2222" verdict=deny
}

expect "DNS over IPv6 answers AAAA for an allowed name (the proxy carries IPv6)" \
  body_is 2001:db8:113::10 aaaa listed.airlock.test
expect "  from the IPv6 session" line event=dns session=v6-sandbox name=listed.airlock.test qtype=AAAA verdict=allow
named_checks ""
# A dual-stack name whose IPv6 address the gateway has no route to: the client's IPv6
# connection is carried over IPv4, to the A records airlock's cache holds (asked here).
world_sbx dig +time=3 +tries=1 +short A @"$GW_SBX_IP6" unrouted6.airlock.test >/dev/null
expect "a dual-stack name the gateway cannot reach over IPv6 is reached over IPv4" \
  body_is "origin says hello to unrouted6.airlock.test" sbx_curl -6 https://unrouted6.airlock.test/
expect "  its line: allowed, the client's IPv6 destination, upstream the IPv4 address" \
  line event=connect session=v6-sandbox name=unrouted6.airlock.test verdict=allow reason=host_allowed \
  "dst=[2001:db8:99::10]:443" "upstream=$ORIGIN_IP:443"
opaque_checks ""

# The same sandbox through TPROXY instead: no NAT, the accepted IPv6 socket keeps the
# address the client meant. A fresh decision log, so every line below is this phase's.
world_stop_airlock
mv "$W/decisions.jsonl" "$W/decisions-redirect.jsonl"
ip netns exec "$GW" nft delete table inet "airlock_${P}_g0"
"$AIRLOCK" nft-rules --iface "$P-g0" --tproxy --proxy-port 15002 >"$W/tproxy.nft"
ip netns exec "$GW" nft -f "$W/tproxy.nft"
ip -n "$GW" -6 rule add fwmark 0x1a1 lookup 417
ip -n "$GW" -6 route add local ::/0 dev lo table 417
sed -i 's|^  proxy: .*|  tproxy: ["0.0.0.0:15002", "[::]:15002"]|' "$W/airlock.yaml"
world_start_airlock -c "$W/airlock.yaml"

expect "TPROXY: the ready line names the IPv6 TPROXY listener" grep -q 'tproxy=.*\[::\]:15002' "$W/airlock.stderr"
named_checks "TPROXY: "
opaque_checks "TPROXY: "

expect "the attacker's origin saw no request at all" test ! -s "$W/attacker-access.log"
check_summary
