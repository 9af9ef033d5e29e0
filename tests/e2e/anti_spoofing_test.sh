#!/usr/bin/env bash
# A sandbox cannot speak with another's voice. A second sandbox, behind a link of its own
# on the same gateway (with its own nft table from `airlock nft-rules`), takes the first
# sandbox's address and asks airlock's DNS with it: the gateway's reverse-path check drops
# the packets on arrival, so airlock never judges them as the first sandbox's session.
# Controls: the same query from the second sandbox's own address reaches airlock (and is
# refused no_session), and the first sandbox's own query is answered.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
WORLD_RECORDS="spoof.airlock.test 203.0.113.10
own.airlock.test 203.0.113.10
first.airlock.test 203.0.113.10"
WORLD_CERT_NAMES="first.airlock.test"
source "$here/lib/world.sh"
source "$here/lib/check.sh"
world_up

SB2=$P-sb2
B_IP=198.18.7.2 B_GW=198.18.7.1
ip netns add "$SB2"
world_down_spoof() { ip netns del "$SB2" 2>/dev/null || true; world_down; }
trap world_down_spoof EXIT
ip -n "$SB2" link set lo up
ip link add "$P-b0" netns "$SB2" type veth peer name "$P-g2" netns "$GW"
ip -n "$SB2" addr add "$B_IP/30" dev "$P-b0"
ip -n "$SB2" link set "$P-b0" up
ip -n "$SB2" route add default via "$B_GW"
ip netns exec "$SB2" sysctl -qw net.ipv6.conf.all.disable_ipv6=1
ip -n "$GW" addr add "$B_GW/30" dev "$P-g2"
ip -n "$GW" link set "$P-g2" up
"$AIRLOCK" nft-rules --iface "$P-g2" | ip netns exec "$GW" nft -f -

world_airlock_config first-sandbox <<'YAML'
      - host: "*.airlock.test"
YAML
world_start_airlock -c "$W/airlock.yaml"

# ask NS SOURCE GATEWAY NAME: one DNS query from SOURCE; the answer is not awaited (a
# spoofed one would go to the real owner of SOURCE).
ask() {
  ip netns exec "$1" python3 -c '
import socket, struct, sys
src, gw, name = sys.argv[1:]
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind((src, 0))
q = struct.pack(">HHHHHH", 0x1234, 0x0100, 1, 0, 0, 0)
q += b"".join(bytes([len(l)]) + l.encode() for l in name.split(".")) + b"\0" + struct.pack(">HH", 1, 1)
for _ in range(3):
    s.sendto(q, (gw, 53))' "$2" "$3" "$4"
}

expect "the first sandbox's own query is answered (the control)" \
  body_is 203.0.113.10 world_sbx dig +short +time=3 +tries=1 first.airlock.test
ask "$SB2" "$B_IP" "$B_GW" own.airlock.test
expect "the second sandbox's query from its own address reaches airlock (no session of its own)" \
  line event=dns name=own.airlock.test "client~=$B_IP:" reason=no_session
ip -n "$SB2" addr add "$SBX_IP/32" dev "$P-b0"
ask "$SB2" "$SBX_IP" "$B_GW" spoof.airlock.test
sleep 1
expect "the same query from the first sandbox's address never reaches airlock" \
  line --count 0 --wait 1 name=spoof.airlock.test
expect "  the gateway dropped it at the reverse-path check" bash -c \
  "ip netns exec $GW nft list chain inet airlock_${P//-/_}_g2 antispoof | grep -Eq 'counter packets [1-9]'"

world_stop_airlock
check_summary
