#!/usr/bin/env bash
# airlock's own addresses are special: the gateway's (read at start and again when one is
# added), the sandboxes' (registered sessions' sources), and the ranges of IANA's registry
# that a sandbox must not reach (198.18.0.0/15, airlock run's pool; 192.0.0.0/24; Azure's
# 168.63.129.16). A DNS answer pointing there is stripped; a connection there is denied
# private_address, a cidr rule's included, unless the rule says `own: true`.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)

WORLD_RECORDS="gw.airlock.test 198.51.100.1
later.airlock.test 203.0.113.2
other.airlock.test 203.0.113.200
pool.airlock.test 198.18.0.6
ietf.airlock.test 192.0.0.170
azure.airlock.test 168.63.129.16
www.airlock.test 203.0.113.10"
WORLD_CERT_NAMES="www.airlock.test"
source "$here/lib/world.sh"
source "$here/lib/check.sh"
world_up

# Services of the gateway itself, on its "internet" side: what a sandbox must not reach.
ip netns exec "$GW" timeout 120 python3 "$here/lib/far_side.py" "$W/gw.log" 110 203.0.113.1:9090 203.0.113.1:9191 &
WORLD_PIDS+=($!)
world_wait_listen "$GW" t 9191

world_airlock_config e2e-own <<'YAML'
      - host: "*.airlock.test"
        ports: [80, 443, 9090]
      - cidr: 203.0.113.1/32
        ports: [9090]
      - cidr: 203.0.113.1/32
        ports: [9191]
        own: true
YAML
sed -i "s|^  dns: 0.0.0.0:15053|  dns: 0.0.0.0:15053\n  control: $W/control.sock|" "$W/airlock.yaml"
world_start_airlock -c "$W/airlock.yaml"

answer() { world_sbx dig +short +time=3 +tries=1 "$1" A; }
probe() { world_sbx timeout 15 python3 "$here/lib/speak.py" "$1" "$2" opaque; }

expect "an ordinary name is answered (the control)" body_is 203.0.113.10 answer www.airlock.test
for n in gw pool ietf azure; do
  expect "$n.airlock.test's answer, an address of airlock's own or a special range, is stripped" \
    body_is "" answer $n.airlock.test
done
expect "  logged private_address, with what was stripped" line event=dns name=gw.airlock.test verdict=deny reason=private_address 'notes~=stripped_1_special_addresses'

expect_not "a cidr rule covering the gateway's own address does not reach it" \
  bash -c "ip netns exec $SBX timeout 15 python3 $here/lib/speak.py 203.0.113.1 9090 opaque | grep -q far:"
expect "  denied private_address, own_address" \
  line event=connect dst=203.0.113.1:9090 verdict=deny reason=private_address 'notes~=own_address'
expect "one that says own: true does" body_is "far:SSH-2.0-sandbox" probe 203.0.113.1 9191
expect "  allowed by that rule" line event=connect dst=203.0.113.1:9191 verdict=allow reason=cidr_allowed \
  "rule=$W/airlock.yaml:16"  # (line 16: the control: line moved the rules down one)
expect "only that connection reached the gateway's services" test "$(grep -c . "$W/gw.log")" -eq 1

# An address the gateway gets after the start, and a sandbox registered after it.
expect "before 203.0.113.2 is the gateway's, its name is answered" body_is 203.0.113.2 answer later.airlock.test
ip -n "$GW" addr add 203.0.113.2/32 dev "$P-g1"
gone=""
for _ in $(seq 50); do [[ -z $(answer later.airlock.test) ]] && { gone=1; break; }; sleep 0.1; done
expect "once the gateway has it, the answer is stripped" test -n "$gone"
expect "before 203.0.113.200 is a sandbox's, its name is answered" body_is 203.0.113.200 answer other.airlock.test
status=$(ip netns exec "$GW" curl -sS --max-time 5 --unix-socket "$W/control.sock" -o /dev/null -w '%{http_code}' \
  -X POST -H 'Content-Type: application/json' http://airlock/v1/sessions \
  -d '{"id":"other-sandbox","sources":["203.0.113.200/32"],"policy":"sandbox"}')
expect "a second sandbox registers (201)" test "$status" = 201
expect "once it is a sandbox's, the answer is stripped" body_is "" answer other.airlock.test

kill "$AIRLOCK_PID"
status=0
wait "$AIRLOCK_PID" || status=$?
expect "airlock exits 0 on SIGTERM" test "$status" -eq 0
check_summary
