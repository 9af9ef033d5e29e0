#!/usr/bin/env bash
# REDIRECT with HTTPS on a listener port of its own (airlock nft-rules --https-port and a
# second listen.proxy entry), which keeps a client's :443 connections from meeting the
# TIME_WAIT of its :80 ones after NAT. :443 reaches that port and only it (a daemon
# without the second listener cannot serve HTTPS); HTTPS and HTTP are judged as before.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)

WORLD_RECORDS="allowed.airlock.test 203.0.113.10
denied.airlock.test 203.0.113.66"
WORLD_CERT_NAMES="allowed.airlock.test denied.airlock.test"
source "$here/lib/world.sh"
source "$here/lib/check.sh"
world_up

# Swap the table world_up installed for one that sends :443 to 15443.
ip netns exec "$GW" nft delete table inet "airlock_${P}_g0"
"$AIRLOCK" nft-rules --iface "$P-g0" --https-port 15443 | ip netns exec "$GW" nft -f -

world_airlock_config e2e-https-port <<'YAML'
      - host: allowed.airlock.test
YAML

# 1. A daemon on the proxy port only: HTTP works, HTTPS finds nobody at 15443.
world_start_airlock -c "$W/airlock.yaml"
expect "http works through the proxy port" body_is "origin says hello to allowed.airlock.test" \
  sbx_curl http://allowed.airlock.test/
expect_not "https does not reach the proxy port: the rule sends :443 elsewhere" \
  sbx_curl --max-time 3 https://allowed.airlock.test/
world_stop_airlock

# 2. With the second listener, both work and are judged as before.
sed -i 's|^  proxy: 0.0.0.0:15001$|  proxy: [0.0.0.0:15001, 0.0.0.0:15443]|' "$W/airlock.yaml"
world_start_airlock -c "$W/airlock.yaml"
expect "ready line names both proxy listeners" grep -q 'proxy=0.0.0.0:15001 proxy=0.0.0.0:15443' "$W/airlock.stderr"
expect "https to an allowed name works through the HTTPS port" \
  body_is "origin says hello to allowed.airlock.test" sbx_curl https://allowed.airlock.test/
expect "  its connect line: allow, the destination the client addressed" \
  line event=connect proto=tls name=allowed.airlock.test verdict=allow dst=203.0.113.10:443 session=e2e-https-port
expect_not "https to a denied name at a forced address fails" \
  sbx_curl --resolve denied.airlock.test:443:$ATTACKER_IP https://denied.airlock.test/
expect "  its connect line: deny, host_not_allowed" \
  line event=connect proto=tls name=denied.airlock.test verdict=deny reason=host_not_allowed dst=$ATTACKER_IP:443
expect "http still works through the proxy port" body_is "origin says hello to allowed.airlock.test" \
  sbx_curl http://allowed.airlock.test/

kill "$AIRLOCK_PID"
status=0
wait "$AIRLOCK_PID" || status=$?
expect "airlock exits 0 on SIGTERM" test "$status" -eq 0

check_summary
