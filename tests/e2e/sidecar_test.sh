#!/usr/bin/env bash
# Sidecar mode: airlock and a workload in one network namespace, as a pod has them. The
# namespace's own output hook (`airlock nft-rules --sidecar --uid UID`) sends the
# workload's TCP and DNS to airlock and exempts airlock's uid; everything else the workload
# sends out is dropped. The world's gateway namespace plays the pod: airlock runs there as
# uid 1337, the workload as nobody (65534), the origin and the "attacker" are in the
# world's internet namespace. Allowed and denied as in gateway mode, over IPv4 and IPv6;
# each bypass is proven blocked by what the far side saw (nothing), next to the same
# packets sent as airlock's uid, which arrive (so the far side's evidence can fail).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
WORLD_IPV6=1
WORLD_RECORDS="allowed.airlock.test 203.0.113.10
allowed.airlock.test AAAA 2001:db8:113::10
denied.airlock.test 203.0.113.66
denied.airlock.test AAAA 2001:db8:113::66"
WORLD_CERT_NAMES="allowed.airlock.test denied.airlock.test"
source "$here/lib/world.sh"
source "$here/lib/check.sh"
command -v setpriv >/dev/null || { echo "missing setpriv (util-linux)"; exit 77; }
world_up

AIRLOCK_UID=1337 WORKLOAD_UID=65534
POD=$GW POD_IP=$GW_NET_IP POD_IP6=$GW_NET_IP6
# airlock and the workload run as users of their own: their files live where both can read.
chmod 711 "$W"
SC=$W/sidecar
mkdir -p "$SC"
cp "$W/ca.crt" "$SC/ca.crt"
chown "$AIRLOCK_UID:$AIRLOCK_UID" "$SC"
chmod 755 "$SC"

cat >"$SC/airlock.yaml" <<YAML
version: 1
listen:
  # Loopback: REDIRECT in the output hook sends to 127.0.0.1 and ::1, and a DNS answer
  # must leave from the address its query was sent to.
  proxy: ["127.0.0.1:15001", "[::1]:15001"]
  dns: ["127.0.0.1:15053", "[::1]:15053"]
upstream_dns: [$DNS_IP]
log:
  decisions: $SC/decisions.jsonl
policies:
  workload:
    allow:
      - host: allowed.airlock.test
sessions:
  - id: pod-v4
    source: $POD_IP/32
    policy: workload
  - id: pod-v6
    source: $POD_IP6/128
    policy: workload
YAML
chmod 644 "$SC/airlock.yaml"
ln -sf "$SC/decisions.jsonl" "$W/decisions.jsonl"  # where check.sh's `line` reads

expect "nft-rules --sidecar refuses uid 0" bash -c "! '$AIRLOCK' nft-rules --sidecar --uid 0 2>&1 | grep -q table"
"$AIRLOCK" nft-rules --sidecar --uid "$AIRLOCK_UID" >"$SC/sidecar.nft"
expect "the sidecar table loads in the pod's namespace" ip netns exec "$POD" nft -f "$SC/sidecar.nft"
[[ $failed -eq 0 ]] || { check_summary; exit 1; }  # nothing below means anything without it
# Unprivileged ping, for both users: the drop, not a missing privilege, must stop the workload's.
ip netns exec "$POD" sysctl -qw net.ipv4.ping_group_range="0 2147483647"

: >"$W/airlock.stderr"
ip netns exec "$POD" setpriv --reuid="$AIRLOCK_UID" --regid="$AIRLOCK_UID" --clear-groups \
  "$AIRLOCK" daemon -c "$SC/airlock.yaml" 2>"$W/airlock.stderr" &
world_await_airlock $!

as_user() { local uid=$1; shift; ip netns exec "$POD" setpriv --reuid="$uid" --regid="$uid" --clear-groups "$@"; }
workload() { as_user "$WORKLOAD_UID" "$@"; }
as_airlock() { as_user "$AIRLOCK_UID" "$@"; }
workload_curl() { workload curl -sS --max-time 10 --cacert "$SC/ca.crt" "$@"; }

expect "airlock runs as its own uid" test "$(stat -c %u "/proc/$AIRLOCK_PID")" -eq "$AIRLOCK_UID"

# 1. Allowed and denied, as in gateway mode.
expect "the workload's HTTPS to an allowed name works" \
  body_is "origin says hello to allowed.airlock.test" workload_curl -4 https://allowed.airlock.test/
expect "  its connect line: allowed, the pod's session, to airlock's own resolution" \
  line event=connect session=pod-v4 proto=tls name=allowed.airlock.test verdict=allow reason=host_allowed \
  dst=203.0.113.10:443 upstream=203.0.113.10:443
expect "  its DNS went to airlock (the resolver the pod names was never asked by the workload)" \
  line event=dns session=pod-v4 name=allowed.airlock.test qtype=A verdict=allow
expect "the workload's plain HTTP to an allowed name works" \
  body_is "origin says hello to allowed.airlock.test" workload_curl -4 http://allowed.airlock.test/
expect_not "the workload's HTTPS to a denied name fails" workload_curl -4 https://denied.airlock.test/
expect "  its DNS line: NXDOMAIN from airlock" \
  line event=dns session=pod-v4 name=denied.airlock.test verdict=deny reason=host_not_allowed rcode=NXDOMAIN
expect_not "  the upstream resolver never saw the denied name" grep -q denied.airlock.test "$W/unbound.log"
expect_not "the workload's HTTPS to the attacker by address with an allowed SNI reaches no attacker" \
  bash -c "ip netns exec $POD setpriv --reuid=$WORKLOAD_UID --regid=$WORKLOAD_UID --clear-groups \
    curl -sS --max-time 10 --cacert $SC/ca.crt --resolve allowed.airlock.test:443:$ATTACKER_IP \
    https://allowed.airlock.test/ | grep -q attacker"
expect "the workload's plain HTTP to the attacker's address (no name) is refused by airlock" \
  bash -c "ip netns exec $POD setpriv --reuid=$WORKLOAD_UID --regid=$WORKLOAD_UID --clear-groups \
    curl -sS --max-time 10 http://$ATTACKER_IP/ | grep -q '\"reason\":\"no_name\"'"
expect "  logged as a denial" line event=connect session=pod-v4 dst=$ATTACKER_IP:80 verdict=deny

# 2. IPv6: redirected to [::1], judged the same.
expect "the workload's HTTPS over IPv6 to an allowed name works" \
  body_is "origin says hello to allowed.airlock.test" workload_curl -6 https://allowed.airlock.test/
expect "  its line: the pod's IPv6 session, to airlock's own IPv6 resolution" \
  line event=connect session=pod-v6 proto=tls name=allowed.airlock.test verdict=allow \
  "upstream=[$ORIGIN_IP6]:443"
expect_not "the workload's HTTPS over IPv6 to a denied name fails" workload_curl -6 https://denied.airlock.test/
expect "the workload's plain HTTP over IPv6 to the attacker's address is refused by airlock" \
  bash -c "ip netns exec $POD setpriv --reuid=$WORKLOAD_UID --regid=$WORKLOAD_UID --clear-groups \
    curl -sS --max-time 10 'http://[$ATTACKER_IP6]/' | grep -q '\"reason\":\"no_name\"'"

# 3. airlock's own traffic is not looped back into itself: were it redirected, each of its
# upstream connections would come back to it as another connection, and none would reach
# the origin. The origin saw the requests, from the pod's addresses.
expect "the origin saw the workload's requests from the pod's addresses (airlock's own traffic went out)" \
  bash -c "grep -q '^$POD_IP ' '$W/origin-access.log' && grep -q '^$POD_IP6 ' '$W/origin-access.log'"
expect_not "the attacker's server saw nothing" test -s "$W/attacker-access.log"

# 4. Bypass channels: the far side logs what reaches it.
# A UDP listener on the attacker's addresses, both families: QUIC (443), DNS (53), 853, any.
ip netns exec "$NET" timeout 120 python3 -c '
import selectors, socket, sys
sel = selectors.DefaultSelector()
for addr in sys.argv[2:]:
    fam = socket.AF_INET6 if ":" in addr else socket.AF_INET
    for port in (53, 443, 853, 9999):
        s = socket.socket(fam, socket.SOCK_DGRAM); s.bind((addr, port)); sel.register(s, selectors.EVENT_READ)
with open(sys.argv[1], "a", buffering=1) as log:
    while True:
        for key, _ in sel.select():
            data, peer = key.fileobj.recvfrom(2048)
            log.write("%s -> %s %r\n" % (peer[0], key.fileobj.getsockname()[1], data[:32]))
' "$SC/far-udp.log" "$ATTACKER_IP" "$ATTACKER_IP6" &
WORLD_PIDS+=($!)
world_wait_listen "$NET" u 9999
# ICMP echo requests the far side receives, counted there.
ip netns exec "$NET" nft -f - <<'NFT'
table inet far_side {
  chain input {
    type filter hook input priority filter; policy accept;
    icmp type echo-request counter
    icmpv6 type echo-request counter
    meta l4proto udplite counter
  }
}
NFT
echo_requests() { ip netns exec "$NET" nft list chain inet far_side input | awk '/echo-request/ {s += $(NF-2)} END {print s + 0}'; }
other_protocol() { ip netns exec "$NET" nft list chain inet far_side input | awk '/udplite/ {print $(NF-2)}'; }
send_udp() {  # send_udp ADDR PORT: one datagram, as whoever runs it
  timeout 5 python3 -c '
import socket, sys
fam = socket.AF_INET6 if ":" in sys.argv[1] else socket.AF_INET
s = socket.socket(fam, socket.SOCK_DGRAM); s.sendto(b"bypass " + sys.argv[2].encode(), (sys.argv[1], int(sys.argv[2])))' "$@"
}

for target in "$ATTACKER_IP 443" "$ATTACKER_IP6 443" "$ATTACKER_IP 853" "$ATTACKER_IP 9999" "$ATTACKER_IP6 9999"; do
  # shellcheck disable=SC2086
  workload bash -c "$(declare -f send_udp); send_udp $target" 2>/dev/null || true
done
sleep 0.5
expect_not "UDP from the workload (QUIC on 443, DoT-ish 853, any port; both families) reaches nothing" \
  grep -q . "$SC/far-udp.log"
expect "DNS aimed at another resolver is answered by airlock" \
  bash -c "ip netns exec $POD setpriv --reuid=$WORKLOAD_UID --regid=$WORKLOAD_UID --clear-groups \
    dig +time=2 +tries=1 @$ATTACKER_IP elsewhere.airlock.test | grep -q 'status: NXDOMAIN'"
expect "  its line names the name" \
  line event=dns session=pod-v4 name=elsewhere.airlock.test verdict=deny rcode=NXDOMAIN
expect_not "  and that resolver saw nothing" grep -q . "$SC/far-udp.log"
# An echo request through an unprivileged ICMP socket (ping_group_range, set above).
send_ping() { timeout 5 python3 -c '
import socket, sys
six = ":" in sys.argv[1]
s = socket.socket(socket.AF_INET6 if six else socket.AF_INET, socket.SOCK_DGRAM,
                  socket.IPPROTO_ICMPV6 if six else socket.IPPROTO_ICMP)
s.sendto(bytes([128 if six else 8, 0, 0, 0, 0, 0, 0, 1]) + b"airlock", (sys.argv[1], 0))' "$1"; }
workload bash -c "$(declare -f send_ping); send_ping $ATTACKER_IP; send_ping $ATTACKER_IP6" 2>/dev/null || true
expect "ICMP echo from the workload, both families, reaches nothing" test "$(echo_requests)" -eq 0
# Another IP protocol a user may send without privileges: UDP-Lite (136), where the
# kernel still has it.
send_udplite() { timeout 5 python3 -c '
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM, 136); s.sendto(b"bypass", (sys.argv[1], 9999))' "$1"; }
udplite=yes
workload bash -c "$(declare -f send_udplite); send_udplite $ATTACKER_IP" 2>"$SC/udplite.err" ||
  { grep -q "Protocol not supported\|protocol not supported" "$SC/udplite.err" && udplite=no; }
if [[ $udplite == yes ]]; then
  expect "another IP protocol (UDP-Lite) from the workload reaches nothing" test "$(other_protocol)" -eq 0
else
  skip "another IP protocol (UDP-Lite) from the workload reaches nothing" \
    "this kernel has no UDP-Lite: no other IP protocol can be sent without privileges"
fi

# The same packets as airlock's uid do arrive: the far side's evidence is real.
as_airlock bash -c "$(declare -f send_udp); send_udp $ATTACKER_IP 9999; send_udp $ATTACKER_IP6 443"
as_airlock bash -c "$(declare -f send_ping); send_ping $ATTACKER_IP"
[[ $udplite == no ]] || as_airlock bash -c "$(declare -f send_udplite); send_udplite $ATTACKER_IP"
sleep 0.5
expect "  while airlock's own UDP arrives at the far side" grep -q "^$POD_IP -> 9999" "$SC/far-udp.log"
expect "  over IPv6 too" grep -q "^$POD_IP6 -> 443" "$SC/far-udp.log"
expect "  and airlock's own ping is counted there" test "$(echo_requests)" -ge 1
if [[ $udplite == yes ]]; then
  expect "  and so is its UDP-Lite" test "$(other_protocol)" -ge 1
else
  skip "  and so is its UDP-Lite" "this kernel has no UDP-Lite"
fi

# 5. Loopback stays open inside the pod, as containers of a pod talk over it.
ip netns exec "$POD" timeout 60 python3 -m http.server --bind 127.0.0.1 8099 --directory "$SC" >/dev/null 2>&1 &
WORLD_PIDS+=($!)
world_wait_listen "$POD" t 8099
expect "the workload reaches a service on the pod's loopback" \
  workload curl -sS --max-time 5 -o /dev/null http://127.0.0.1:8099/airlock.yaml

check_summary
