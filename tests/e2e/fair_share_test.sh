#!/usr/bin/env bash
# Two sandboxes, one misbehaving: sandbox A holds 3,000 connections whose handshake never ends,
# opens 1,000 more a second and sends 3,000 DNS queries a second for names nobody allows;
# sandbox B (its own namespace, its own session) meanwhile fetches an allowed page and
# resolves an allowed name twice a second. With the shipped defaults (each session's share:
# 500 pending handshakes, 5,000 connections, 200 queries a second) B is never refused and
# never waits a second, and A's excess is refused under A's name. The same flood with the
# shares set to 0 is the control: A then fills the daemon-wide pending_handshakes, the
# listeners stop accepting, and B's connections wait behind A's for seconds (or fail), so
# the check above is one that can fail. One threshold serves both rounds: B's slowest was
# under 100 ms with the shares and 1.9 s to 7 s without them; how long the control waits
# depends on the machine, so it is not asked to wait longer than it must to count.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
WORLD_RECORDS="ok.airlock.test 203.0.113.10"
WORLD_CERT_NAMES="ok.airlock.test"
source "$here/lib/world.sh"
source "$here/lib/check.sh"
world_up

# Sandbox B: a namespace of its own behind the gateway, 198.18.0.2, with its own nft table.
SB2=$P-sb2
WORLD_EXTRA_NS+=("$SB2")
ip netns add "$SB2"
ip -n "$SB2" link set lo up
ip link add "$P-s2" netns "$SB2" type veth peer name "$P-g2" netns "$GW"
ip netns exec "$SB2" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
ip -n "$SB2" addr add 198.18.0.2/24 dev "$P-s2"
ip -n "$GW" addr add 198.18.0.1/24 dev "$P-g2"
ip -n "$SB2" link set "$P-s2" up
ip -n "$GW" link set "$P-g2" up
ip -n "$SB2" route add default via 198.18.0.1
mkdir -p "/etc/netns/$SB2"
echo "nameserver 198.18.0.1" >"/etc/netns/$SB2/resolv.conf"
"$AIRLOCK" nft-rules --iface "$P-g2" | ip netns exec "$GW" nft -f -

world_airlock_config sandbox-a <<'YAML'
      - host: ok.airlock.test
YAML
cat >>"$W/airlock.yaml" <<'YAML'
  - id: sandbox-b
    source: 198.18.0.2/32
    policy: sandbox
YAML
cp "$W/airlock.yaml" "$W/shares-off.yaml"
printf 'limits:\n  session_pending_handshakes: 0\n  session_connections: 0\n' >>"$W/shares-off.yaml"

# probe_b SECONDS: B's curl and dig, twice a second; one line each "curl|dig OK|FAIL MS".
probe_b() {
  local end=$((SECONDS + $1))
  while ((SECONDS < end)); do
    local t0 t1 out
    t0=$(date +%s%N)
    if out=$(ip netns exec "$SB2" curl -sS --max-time 8 --cacert "$W/ca.crt" https://ok.airlock.test/ 2>&1); then
      t1=$(date +%s%N); echo "curl OK $(((t1 - t0) / 1000000))"
    else
      t1=$(date +%s%N); echo "curl FAIL $(((t1 - t0) / 1000000)) $out"
    fi
    t0=$(date +%s%N)
    out=$(ip netns exec "$SB2" dig +time=8 +tries=1 +short @198.18.0.1 ok.airlock.test A 2>&1 || true)
    t1=$(date +%s%N)
    if [[ $out == 203.0.113.10 ]]; then echo "dig OK $(((t1 - t0) / 1000000))"; else echo "dig FAIL $(((t1 - t0) / 1000000)) $out"; fi
    sleep 0.5
  done
}
# flood_a: A's flood for 12 s (its output in $W/flood-$1.out), B probed from its 3rd second
# for 8 s (in $W/probe-$1.out).
flood_round() {
  world_sbx timeout 40 python3 "$here/lib/flood.py" 203.0.113.10:443 3000 1000 12 "$GW_SBX_IP" 3000 \
    >"$W/flood-$1.out" 2>&1 &
  local flood=$!
  sleep 3
  probe_b 8 >"$W/probe-$1.out"
  wait "$flood" || true
  cat "$W/flood-$1.out" "$W/probe-$1.out"
}
worst_ms() { awk '{ if ($3 > m) m = $3 } END { print m + 0 }' "$1"; }
starve_ms=1000

world_start_airlock -c "$W/airlock.yaml"
expect "B fetches through airlock before any flood" \
  ip netns exec "$SB2" curl -sS --max-time 5 --cacert "$W/ca.crt" -o /dev/null https://ok.airlock.test/
flood_round shares
expect "A flooded (opened thousands of connections, sent thousands of queries)" \
  grep -Eq 'opened=[0-9]{4,} dns_sent=[0-9]{4,}' "$W/flood-shares.out"
expect "with the default shares, every one of B's fetches and lookups succeeded" \
  test "$(grep -c FAIL "$W/probe-shares.out" || true)" = 0
expect "  and there were at least 8 of each" \
  test "$(grep -c '^curl OK' "$W/probe-shares.out")" -ge 8 -a "$(grep -c '^dig OK' "$W/probe-shares.out")" -ge 8
expect "  none took $starve_ms ms or more (slowest: $(worst_ms "$W/probe-shares.out") ms)" \
  test "$(worst_ms "$W/probe-shares.out")" -lt $starve_ms
expect "A's excess connections were refused under A's name (limit:session_pending_handshakes)" \
  line event=connect session=sandbox-a reason=limit_exceeded notes~=limit:session_pending_handshakes
expect "A's excess queries were refused under A's name (rate)" \
  line event=dns session=sandbox-a reason=limit_exceeded rcode=REFUSED
expect_not "B was refused nothing" line --wait 1 session=sandbox-b verdict=deny
expect "B's fetches were allowed and logged as B's" line event=connect session=sandbox-b verdict=allow name=ok.airlock.test

# The control: the same flood with the shares off leaves B to the daemon-wide cap.
world_stop_airlock
mv "$W/decisions.jsonl" "$W/decisions-shares.jsonl"
world_start_airlock -c "$W/shares-off.yaml"
flood_round off
expect "with the shares off, B starves: a fetch refused or waiting $starve_ms ms or more (slowest: $(worst_ms "$W/probe-off.out") ms, $(grep -c FAIL "$W/probe-off.out" || true) failed)" \
  bash -c "grep -q FAIL '$W/probe-off.out' || test \"$(worst_ms "$W/probe-off.out")\" -ge $starve_ms"
expect "  behind A's handshakes, at the daemon-wide cap (the listeners paused)" \
  grep -q 'at limits.pending_handshakes: new connections wait' "$W/airlock.stderr"
check_summary
