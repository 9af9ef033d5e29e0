#!/usr/bin/env bash
# airlock killed with SIGKILL and started again (ROBUSTNESS E5). While it is dead the
# gateway's nft rules still redirect everything to its ports, so the sandbox reaches
# nothing: not the origin by name, not by a hard-coded address, not another resolver. The
# name table is not kept across the restart: an address bound before it is refused
# until the sandbox asks again (the conservative rebuild). The outage is measured.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
WORLD_RECORDS="listed.airlock.test 203.0.113.10
ssh.airlock.test 203.0.113.11"
WORLD_CERT_NAMES="listed.airlock.test"
source "$here/lib/world.sh"
source "$here/lib/check.sh"
world_up
world_airlock_config restart-sandbox <<'YAML'
      - host: listed.airlock.test
      - host: ssh.airlock.test
        ports: [22]
YAML
world_start_airlock -c "$W/airlock.yaml"
SSH_IP=203.0.113.11  # an address of its own: no other name's answer binds it
ip -n "$NET" addr add "$SSH_IP/24" dev "$P-n0"
world_tcp_banner "$SSH_IP" 22

works() { body_is "origin says hello to listed.airlock.test" sbx_curl --max-time 3 https://listed.airlock.test/; }
ssh_like() { body_is "SSH-2.0-airlock-e2e" world_tcp_probe "$SSH_IP" 22; }
origin_requests() { wc -l <"$W/origin-access.log"; }

expect "before: the sandbox fetches by name" works
world_sbx dig +time=2 +tries=1 +short @"$GW_SBX_IP" ssh.airlock.test >/dev/null
expect "  and reaches an address its DNS answer gave, by address alone" ssh_like

kill -9 "$AIRLOCK_PID"
wait "$AIRLOCK_PID" 2>/dev/null || true
alive=()  # the killed pid leaves the list: world_down must not signal it once reused
for pid in "${WORLD_PIDS[@]}"; do [[ $pid == "$AIRLOCK_PID" ]] || alive+=("$pid"); done
WORLD_PIDS=("${alive[@]}")
killed_at=$(date +%s%N)
seen=$(origin_requests)
expect_not "while airlock is dead: no fetch by name" works
expect_not "  none by a hard-coded address" \
  sbx_curl --max-time 3 --resolve "listed.airlock.test:443:$ORIGIN_IP" https://listed.airlock.test/
expect_not "  no plain HTTP to the origin's address" sbx_curl --max-time 3 "http://$ORIGIN_IP/"
expect_not "  no DNS from another resolver" world_sbx dig +time=2 +tries=1 @"$DNS_IP" listed.airlock.test
expect "  and the origin saw nothing of it" test "$(origin_requests)" -eq "$seen"

restarted_at=$(date +%s%N)
world_start_airlock -c "$W/airlock.yaml"
for _ in $(seq 100); do works 2>/dev/null && break; sleep 0.02; done
now=$(date +%s%N)
echo "outage: $(((now - restarted_at) / 1000000)) ms from the restart to the first fetch served;" \
  "$(((now - killed_at) / 1000000)) ms from the SIGKILL, the checks while dead included"
expect "after the restart: the sandbox fetches by name again" works
expect_not "  an address bound before the restart is refused by address alone (the table starts empty)" ssh_like
expect "  logged as no_name" line event=connect dst="$SSH_IP:22" verdict=deny reason=no_name
world_sbx dig +time=2 +tries=1 +short @"$GW_SBX_IP" ssh.airlock.test >/dev/null
expect "  and reached again once the sandbox asks its DNS again" ssh_like
check_summary
