#!/usr/bin/env bash
# Gateway mode has no way around airlock: every channel a sandbox could try instead of
# airlock's two sockets (QUIC and other UDP, ICMP and ICMPv6 echo, DNS over TLS to an
# address, DoH to an address with no name, another resolver over UDP and TCP 53, IPv6
# straight to the origin, and IP protocols other than TCP, UDP and ICMP: SCTP, GRE, 6in4,
# ESP, UDP-Lite) is proven shut by what the far side recorded: a capture of every frame
# that reaches the "internet" namespace's link, the listeners there, and the stand-in
# resolver's query log. The client's error alone proves nothing here.
#
# Each mechanism has its controls, so that "nothing arrived" can fail:
#   - a capture of the gateway's sandbox-side link shows the sandbox really sent it;
#   - airlock's own allowed connections and queries do arrive at the far side, captured;
#   - the gateway forwards (ip_forward and IPv6 forwarding on, as on a host that runs
#     containers), so the nft table is the only thing in the way; the table's forward drop
#     counts the sandbox's packets;
#   - at the end the table is removed and the same attempts are sent again: each then
#     arrives at the far side from the sandbox's own address (capture, listener, resolver log).
# Before any traffic, the ruleset is audited as nft loaded it (lib/nft_audit.py over `nft -j`,
# rule by rule, not as substrings), for this world's table and for the --https-port and
# --tproxy variants; mutated tables show that the audit catches an accept too many.
#
# Documentation ranges only, inside this test's own namespaces; the only routes added are
# in the "internet" namespace, back to the sandbox's prefixes through the gateway, for the
# last control. Nothing leaves the machine.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
WORLD_IPV6=1
WORLD_RECORDS="allowed.airlock.test 203.0.113.10
allowed.airlock.test AAAA 2001:db8:113::10
via-53-udp.airlock.test 203.0.113.66
via-53-tcp.airlock.test 203.0.113.66
via-66-udp.airlock.test 203.0.113.66
via-66-tcp.airlock.test 203.0.113.66
via-66v6-udp.airlock.test 203.0.113.66
via-66v6-tcp.airlock.test 203.0.113.66
open-53.airlock.test 203.0.113.66"
WORLD_CERT_NAMES="allowed.airlock.test"
source "$here/lib/world.sh"
source "$here/lib/check.sh"
world_up

TABLE=airlock_${P}_g0
SBX_IP6_NET=2001:db8:51:
WIRE=$here/lib/wire.py
FAR=$W/far.wire NEAR=$W/near.wire UDP_LOG=$W/far-udp.log TCP_LOG=$W/far-tcp.log
: >"$UDP_LOG"
: >"$TCP_LOG"
wire() { python3 "$WIRE" "$@"; }
# A marker from the gateway to the far side, after the attempts before it have crossed.
mark() { sleep 0.2; ip netns exec "$GW" python3 "$WIRE" mark "$ATTACKER_IP" "$1"; }
sbx_send() { world_sbx timeout 10 python3 "$WIRE" send "$@"; }
gw_send() { ip netns exec "$GW" timeout 10 python3 "$WIRE" send "$@"; }
# refused_tls ADDR PORT [SNI]: a ClientHello from the sandbox got airlock's refusal (an
# alert, a reset or a close), not a far-side answer.
refused_tls() { local o; o=$(sbx_send tls "$@"); echo "$o"; [[ $o =~ ^(alert|reset|closed)$ ]]; }
wait_for_file() { for _ in $(seq 100); do [[ -e $1 ]] && return 0; sleep 0.05; done; echo "no $1"; return 1; }
OTHER_PROTOS="132 47 41 50 136"  # SCTP, GRE, IPv6-in-IPv4 (6in4), ESP, UDP-Lite

if command -v tcpdump >/dev/null; then
  echo "note: tcpdump is installed; the capture is lib/wire.py's anyway (AF_PACKET, tcpdump's own tap)"
else
  echo "note: tcpdump is not installed; the far side is captured by lib/wire.py (AF_PACKET, tcpdump's own tap)"
fi

# The gateway routes between its links: without the table, the sandbox would be on the internet.
ip netns exec "$GW" sysctl -qw net.ipv4.ip_forward=1 net.ipv6.conf.all.forwarding=1

# 1. Structure: the tables as nft loaded them, walked rule by rule.
audit() {  # audit JSON-FILE AUDIT-ARGS...
  local f=$1; shift
  python3 "$here/lib/nft_audit.py" "$@" <"$f"
}
ip netns exec "$GW" nft -j list table inet "$TABLE" >"$W/live.json"
expect "structure: the world's gateway table accepts from the sandbox only what was redirected to airlock, and ND" \
  audit "$W/live.json" --iface "$P-g0" --proxy-ports 15001 --dns-port 15053
sed 's/^/     /' "$W/last.out"
# Variants, loaded for an interface that does not exist here (they match no packet).
variant() {  # variant NAME AUDIT-ARGS -- NFT-RULES-ARGS: loads, lists as JSON, removes
  local name=$1 audit_args=() rules_args=()
  shift
  while [[ $1 != -- ]]; do audit_args+=("$1"); shift; done
  shift
  rules_args=("$@")
  "$AIRLOCK" nft-rules --iface "$P-v" "${rules_args[@]}" | grep -v '^#' | ip netns exec "$GW" nft -f -
  ip netns exec "$GW" nft -j list table inet "airlock_${P}_v" >"$W/$name.json"
  ip netns exec "$GW" nft delete table inet "airlock_${P}_v"
  audit "$W/$name.json" --iface "$P-v" "${audit_args[@]}"
}
expect "structure: the --https-port table too (both proxy ports admitted, nothing else)" \
  variant https --proxy-ports 15001,15443 --dns-port 15053 -- --https-port 15443
expect "structure: the --tproxy table too (what it diverted and marked, DNS redirected, ND)" \
  variant tproxy --proxy-ports 15002 --dns-port 15053 --tproxy 0x1a1 -- --tproxy --proxy-port 15002
# The audit can fail: each mutation of the generated table is one it must catch.
mutate() {  # mutate KIND IFACE: the generated table on stdin, changed
  python3 -c '
import sys
kind, iface = sys.argv[1], sys.argv[2]
t = sys.stdin.read()
q = "iifname \"%s\"" % iface
def in_chain(t, name, old, new):
    start = t.index("  chain %s {\n" % name)
    end = t.index("  }\n", start)
    assert old in t[start:end], (name, old)
    return t[:start] + t[start:end].replace(old, new, 1) + t[end:]
drop = "    %s counter drop\n" % q
if kind == "udp443":
    t = in_chain(t, "input", drop, "    %s udp dport 443 accept\n" % q + drop)
elif kind == "forward":
    t = in_chain(t, "forward", drop, "    %s ip daddr 203.0.113.0/24 accept\n" % q + drop)
elif kind == "no-dnat":
    t = in_chain(t, "input", "ct status dnat tcp dport", "tcp dport")
elif kind == "no-drop":
    t = in_chain(t, "input", drop, "")
elif kind == "dnat-out":
    t = in_chain(t, "prerouting", "    %s meta l4proto tcp" % q,
                 "    %s udp dport 443 dnat ip to 203.0.113.66\n    %s meta l4proto tcp" % (q, q))
elif kind == "jump":
    t = t.replace("  chain input {\n", "  chain sneak {\n    accept\n  }\n  chain input {\n", 1)
    t = in_chain(t, "input", "    %s ct status" % q, "    %s jump sneak\n    %s ct status" % (q, q))
elif kind == "any-iface":
    t = in_chain(t, "forward", drop, "    udp dport 443 accept\n" + drop)
sys.stdout.write(t)' "$1" "$2"
}
audit_catches() {  # audit_catches KIND PROBLEM-TEXT: the audit fails the mutated table, naming why
  "$AIRLOCK" nft-rules --iface "$P-m" | mutate "$1" "$P-m" | ip netns exec "$GW" nft -f -
  ip netns exec "$GW" nft -j list table inet "airlock_${P}_m" >"$W/mutant-$1.json"
  ip netns exec "$GW" nft delete table inet "airlock_${P}_m"
  if audit "$W/mutant-$1.json" --iface "$P-m" --proxy-ports 15001 --dns-port 15053 >"$W/mutant-$1.out"; then
    echo "the audit passed a table with the mutation $1"; return 1
  fi
  grep "PROBLEM: .*$2" "$W/mutant-$1.out" || { cat "$W/mutant-$1.out"; return 1; }
}
expect "  the audit catches an extra accept (UDP 443) before the input drop" audit_catches udp443 "accepts what it is not meant to"
expect "  the audit catches an accept in the forward chain" audit_catches forward "accepts what it is not meant to"
expect "  the audit catches the proxy admitted without ct status dnat" audit_catches no-dnat "accepts what it is not meant to"
expect "  the audit catches a missing input drop" audit_catches no-drop "no catch-all drop"
expect "  the audit catches a NAT rule that sends elsewhere" audit_catches dnat-out "a NAT rule may only redirect"
expect "  the audit catches a jump to a chain that accepts" audit_catches jump "leaves the walk"
expect "  the audit catches a rule not limited to the sandbox's link" audit_catches any-iface "not limited to"
expect "  (the world's own table is the same as when audited: no mutant is left)" \
  bash -c "[[ \$(ip netns exec $GW nft list tables | grep -c airlock_) == 1 ]]"
[[ $failed -eq 0 ]] || { check_summary; exit 1; }  # the traffic below means little without a sound table

# 2. airlock, and the far side's recorders.
world_airlock_config bypass-v4 <<'YAML'
      - host: allowed.airlock.test
YAML
sed -i 's|^  proxy: 0.0.0.0:15001|  proxy: ["0.0.0.0:15001", "[::]:15001"]|; s|^  dns: 0.0.0.0:15053|  dns: ["0.0.0.0:15053", "[::]:15053"]|' \
  "$W/airlock.yaml"
printf '  - id: bypass-v6\n    source: 2001:db8:51::/64\n    policy: sandbox\n' >>"$W/airlock.yaml"
world_start_airlock -c "$W/airlock.yaml"

ip netns exec "$NET" timeout 150 python3 "$WIRE" capture "$P-n0" "$FAR" 150 &
WORLD_PIDS+=($!)
ip netns exec "$GW" timeout 150 python3 "$WIRE" capture "$P-g0" "$NEAR" 150 &
WORLD_PIDS+=($!)
ip netns exec "$NET" timeout 150 python3 "$WIRE" udp-listen "$UDP_LOG" 150 \
  "$ATTACKER_IP:443" "$ATTACKER_IP6:443" "$ORIGIN_IP:443" "$ORIGIN_IP6:443" "$ATTACKER_IP:53" "$ATTACKER_IP6:53" \
  "$ATTACKER_IP:853" "$ATTACKER_IP:9999" &
WORLD_PIDS+=($!)
ip netns exec "$NET" timeout 150 python3 "$here/lib/far_side.py" "$TCP_LOG" 150 \
  "$ATTACKER_IP:853" "$ATTACKER_IP6:853" "$ORIGIN_IP:853" "$ATTACKER_IP:53" "$ATTACKER_IP6:53" &
WORLD_PIDS+=($!)
expect "the far side's capture is running" wait_for_file "$FAR.ready"
expect "the gateway's sandbox-side capture is running" wait_for_file "$NEAR.ready"
world_wait_listen "$NET" u 9999
world_wait_listen "$NET" t 853
mark start
expect "  the far side's capture logs what crosses its link (the marker)" wire some "$FAR" mark=start

# 3. Controls: airlock's own traffic arrives, and is seen arriving.
expect "control: HTTPS to an allowed name works through airlock" \
  body_is "origin says hello to allowed.airlock.test" sbx_curl -4 https://allowed.airlock.test/
expect "  far side: airlock's connection to the origin arrived, from the gateway" \
  wire some "$FAR" src="$GW_NET_IP" dst="$ORIGIN_IP" dport=443 syn=1
expect "  and carried a TLS hello" wire some "$FAR" src="$GW_NET_IP" dst="$ORIGIN_IP" dport=443 tls=1
expect "  the stand-in resolver logged airlock's query, from the gateway's address" \
  grep -q "$GW_NET_IP allowed.airlock.test. A IN" "$W/unbound.log"
expect "control: the same over IPv6" \
  body_is "origin says hello to allowed.airlock.test" sbx_curl -6 https://allowed.airlock.test/
expect "  far side: airlock's IPv6 connection to the origin arrived" \
  wire some "$FAR" src="$GW_NET_IP6" dst="$ORIGIN_IP6" dport=443 syn=1
expect "  near side: the sandbox's own connection was seen on the gateway's link" \
  wire some "$NEAR" src="$SBX_IP6" dst="$ORIGIN_IP6" dport=443 tls=1
# The gateway's own packets of each kind reach the far side, and the capture decodes them.
gw_send quic "$ATTACKER_IP" 443 >/dev/null
gw_send echo "$ATTACKER_IP" >/dev/null
gw_send echo "$ATTACKER_IP6" >/dev/null
for p in $OTHER_PROTOS; do gw_send raw "$ATTACKER_IP" "$p" >/dev/null; gw_send raw "$ATTACKER_IP6" "$p" >/dev/null; done
mark gateway-controls
expect "control: the gateway's own QUIC datagram arrives at the far side (capture and listener)" \
  bash -c "python3 $WIRE some $FAR --until gateway-controls src=$GW_NET_IP proto=17 dport=443 && grep -q '^$GW_NET_IP -> $ATTACKER_IP:443' $UDP_LOG"
expect "control: the gateway's own ICMP and ICMPv6 echo arrive" \
  bash -c "python3 $WIRE some $FAR --until gateway-controls src=$GW_NET_IP proto=1 icmp=8 && python3 $WIRE some $FAR --until gateway-controls src=$GW_NET_IP6 proto=58 icmp=128"
for p in $OTHER_PROTOS; do
  expect "control: the gateway's own IP protocol $p arrives, both families" \
    bash -c "python3 $WIRE some $FAR --until gateway-controls src=$GW_NET_IP proto=$p && python3 $WIRE some $FAR --until gateway-controls src=$GW_NET_IP6 proto=$p"
done
# From here on the gateway sends nothing of these kinds itself: any that arrives came from the sandbox.
mark attempts

# 4. The attempts, each seen leaving the sandbox (near side).
# 4a. QUIC and other UDP, both families, to the attacker and to the origin itself.
for dst in "$ATTACKER_IP" "$ORIGIN_IP" "$ATTACKER_IP6" "$ORIGIN_IP6"; do sbx_send quic "$dst" 443 >/dev/null; done
sbx_send udp "$ATTACKER_IP" 853 >/dev/null  # DNS over QUIC's port
sbx_send udp "$ATTACKER_IP" 9999 >/dev/null
expect "QUIC: the sandbox's datagrams to :443 left it (IPv4 and IPv6, seen on the gateway's link)" \
  bash -c "python3 $WIRE some $NEAR src=$SBX_IP dst=$ATTACKER_IP proto=17 dport=443 && python3 $WIRE some $NEAR src=$SBX_IP6 dst=$ORIGIN_IP6 proto=17 dport=443"
expect "UDP: to :853 and :9999 too" \
  bash -c "python3 $WIRE some $NEAR src=$SBX_IP proto=17 dport=853 && python3 $WIRE some $NEAR src=$SBX_IP proto=17 dport=9999"

# 4b. ICMP and ICMPv6 echo.
sbx_send echo "$ATTACKER_IP" >/dev/null
sbx_send echo "$ORIGIN_IP" >/dev/null
sbx_send echo "$ATTACKER_IP6" >/dev/null
sbx_send echo "$ORIGIN_IP6" >/dev/null
expect "ICMP echo: the sandbox's requests left it, both families" \
  bash -c "python3 $WIRE some $NEAR src=$SBX_IP dst=$ATTACKER_IP proto=1 icmp=8 && python3 $WIRE some $NEAR src=$SBX_IP6 dst=$ATTACKER_IP6 proto=58 icmp=128"

# 4c. Other IP protocols, by raw socket (the sandbox runs as root in its namespace).
for p in $OTHER_PROTOS; do sbx_send raw "$ATTACKER_IP" "$p" >/dev/null; sbx_send raw "$ATTACKER_IP6" "$p" >/dev/null; done
for p in $OTHER_PROTOS; do
  expect "IP protocol $p: the sandbox's packets left it, both families" \
    bash -c "python3 $WIRE some $NEAR src=$SBX_IP proto=$p && python3 $WIRE some $NEAR src=$SBX_IP6 proto=$p"
done

# 4d. DNS over TLS to an address: TCP 853 goes to the proxy, which refuses it.
expect "DoT to the attacker's address without SNI is refused by airlock" refused_tls "$ATTACKER_IP" 853
expect "  its line: deny no_name, connected nowhere" \
  line event=connect session=bypass-v4 "dst=$ATTACKER_IP:853" verdict=deny reason=no_name upstream=null
expect "DoT to that address naming a public resolver (dns.google) is refused" refused_tls "$ATTACKER_IP" 853 dns.google
expect "  its line: deny dns.google host_denied (a public resolver), connected nowhere" \
  line event=connect session=bypass-v4 name=dns.google "dst=$ATTACKER_IP:853" verdict=deny reason=host_denied upstream=null
expect "DoT to the origin's address naming the allowed host (a port it does not list) is refused" \
  refused_tls "$ORIGIN_IP" 853 allowed.airlock.test
expect "  its line: deny port_not_allowed, connected nowhere" \
  line event=connect session=bypass-v4 name=allowed.airlock.test "dst=$ORIGIN_IP:853" verdict=deny reason=port_not_allowed \
  upstream=null
expect "DoT over IPv6 to the attacker's address is refused" refused_tls "$ATTACKER_IP6" 853
expect "  its line: deny no_name, the IPv6 session, connected nowhere" \
  line event=connect session=bypass-v6 "dst=[$ATTACKER_IP6]:853" verdict=deny reason=no_name upstream=null
expect "  near side: the sandbox's hellos to :853 left it" \
  bash -c "python3 $WIRE some $NEAR src=$SBX_IP dport=853 tls=1 && python3 $WIRE some $NEAR src=$SBX_IP6 dport=853 tls=1"

# 4e. DoH to an address (no name, so no SNI), both to the attacker and to the origin's own
#     address, which airlock's DNS hands each session for an allowed name just before (a
#     binding lasts the answer's TTL: the attempts must come within it).
expect "the sandbox's IPv4 session asks airlock for the allowed name's A" \
  body_is "$ORIGIN_IP" world_sbx dig +time=2 +tries=1 +short A @"$GW_SBX_IP" allowed.airlock.test
expect "the sandbox's IPv6 session asks airlock for the allowed name's AAAA" \
  body_is "$ORIGIN_IP6" world_sbx dig +time=2 +tries=1 +short AAAA @"$GW_SBX_IP6" allowed.airlock.test
Q=AAABAAABAAAAAAAAB2FsbG93ZWQHYWlybG9jawR0ZXN0AAABAAE  # base64url: a query for allowed.airlock.test A
mark doh-start
expect_not "DoH by IP: https://$ATTACKER_IP/dns-query fails" sbx_curl -k "https://$ATTACKER_IP/dns-query?dns=$Q"
expect "  its line: deny no_name, connected nowhere" \
  line event=connect session=bypass-v4 "dst=$ATTACKER_IP:443" verdict=deny reason=no_name upstream=null
expect_not "DoH by IP to the origin's address, which airlock's DNS handed out, fails" \
  sbx_curl -k "https://$ORIGIN_IP/dns-query?dns=$Q"
expect "  its line: deny protocol_not_allowed (TLS without SNI on :443), connected nowhere" \
  line event=connect session=bypass-v4 "dst=$ORIGIN_IP:443" verdict=deny reason=protocol_not_allowed \
  'notes~=spoke:tls_without_sni' upstream=null
expect_not "DoH by IPv6 address to the origin fails" sbx_curl -k "https://[$ORIGIN_IP6]/dns-query?dns=$Q"
expect "  its line: deny protocol_not_allowed, the IPv6 session, connected nowhere" \
  line event=connect session=bypass-v6 "dst=[$ORIGIN_IP6]:443" verdict=deny reason=protocol_not_allowed \
  'notes~=spoke:tls_without_sni' upstream=null
# 4f. IPv6 straight to the origin's address, plain HTTP (the Host is the address).
expect "IPv6 straight to the origin's address over plain HTTP is refused by airlock (403)" \
  body_is 403 world_sbx curl -s -g -o /dev/null -w '%{http_code}' --max-time 10 "http://[$ORIGIN_IP6]/"
expect "  its line: deny protocol_not_allowed (a request naming no host), connected nowhere" \
  line event=connect session=bypass-v6 "dst=[$ORIGIN_IP6]:80" verdict=deny reason=protocol_not_allowed upstream=null
mark doh-end
expect "  near side: the sandbox's name-less hellos to :443 left it, both families" \
  bash -c "python3 $WIRE some $NEAR src=$SBX_IP dst=$ATTACKER_IP dport=443 tls=1 && python3 $WIRE some $NEAR src=$SBX_IP6 dst=$ORIGIN_IP6 dport=443 tls=1"
expect "  far side: while they ran, not one TCP packet to :443 or :80 from anyone (airlock connected nowhere)" \
  bash -c "python3 $WIRE none $FAR --after doh-start --until doh-end proto=6 dport=443 &&
           python3 $WIRE none $FAR --after doh-start --until doh-end proto=6 dport=80"
expect "  and no TLS at all" wire none "$FAR" --after doh-start --until doh-end tls=1
expect_not "  the origin's and the attacker's web servers logged no dns-query" \
  grep -h dns-query "$W/origin-access.log" "$W/attacker-access.log"

# 4g. Another resolver, asked directly, over UDP and TCP 53: the stand-in resolver
#     (unbound, 203.0.113.53) and a rogue one on the attacker's addresses. Each name has an
#     A record there: a NOERROR would be theirs, an NXDOMAIN with an extended error is airlock's.
asked_airlock() {  # asked_airlock SERVER NAME [+tcp]
  local out
  out=$(world_sbx dig +time=2 +tries=1 "${@:3}" @"$1" "$2" 2>&1) || true
  echo "$out" | grep -E 'status:|EDE' || echo "$out" | tail -3
  grep -q 'status: NXDOMAIN' <<<"$out" && grep -q 'EDE: 15 (Blocked)' <<<"$out"
}
expect "DNS to 203.0.113.53 over UDP is answered by airlock" asked_airlock "$DNS_IP" via-53-udp.airlock.test
expect "DNS to 203.0.113.53 over TCP is answered by airlock" asked_airlock "$DNS_IP" via-53-tcp.airlock.test +tcp
expect "DNS to the attacker's address over UDP is answered by airlock" asked_airlock "$ATTACKER_IP" via-66-udp.airlock.test
expect "DNS to the attacker's address over TCP is answered by airlock" \
  asked_airlock "$ATTACKER_IP" via-66-tcp.airlock.test +tcp
expect "DNS to the attacker's IPv6 address over UDP is answered by airlock" \
  asked_airlock "$ATTACKER_IP6" via-66v6-udp.airlock.test
expect "DNS to the attacker's IPv6 address over TCP is answered by airlock" \
  asked_airlock "$ATTACKER_IP6" via-66v6-tcp.airlock.test +tcp
expect "  each has its deny line, in the sandbox's sessions" python3 -c '
import json, sys
names = {json.loads(l).get("name") for l in open(sys.argv[1])
         if json.loads(l).get("event") == "dns" and json.loads(l).get("verdict") == "deny"
         and json.loads(l).get("session") in ("bypass-v4", "bypass-v6")}
want = {f"via-{w}.airlock.test" for w in ("53-udp", "53-tcp", "66-udp", "66-tcp", "66v6-udp", "66v6-tcp")}
print("missing:", sorted(want - names))
sys.exit(0 if want <= names else 1)' "$W/decisions.jsonl"
expect "  near side: the sandbox's queries to 203.0.113.53 left it (UDP and TCP)" \
  bash -c "python3 $WIRE some $NEAR src=$SBX_IP dst=$DNS_IP proto=17 dport=53 && python3 $WIRE some $NEAR src=$SBX_IP dst=$DNS_IP proto=6 dport=53"
mark attempts-end

# 5. The far side's evidence: nothing from the sandbox, of any kind, arrived.
expect "far side: no packet from the sandbox's IPv4 address arrived at all" \
  wire none "$FAR" --until attempts-end "src=$SBX_IP"
expect "far side: no packet from the sandbox's IPv6 prefix arrived at all (none of it reached the origin's IPv6 address)" \
  wire none "$FAR" --until attempts-end "src^=$SBX_IP6_NET"
expect "far side: no UDP to :443 (QUIC) from anyone after the gateway's control" \
  wire none "$FAR" --after attempts --until attempts-end proto=17 dport=443
expect "  the UDP listener got nothing but the gateway's control datagram" \
  bash -c "! grep -v '^$GW_NET_IP -> $ATTACKER_IP:443 ' $UDP_LOG"
expect "far side: no UDP to :853 or :9999" \
  bash -c "python3 $WIRE none $FAR --until attempts-end proto=17 dport=853 && python3 $WIRE none $FAR --until attempts-end proto=17 dport=9999"
expect "far side: no ICMP or ICMPv6 echo request after the gateway's control" \
  bash -c "python3 $WIRE none $FAR --after attempts --until attempts-end proto=1 icmp=8 &&
           python3 $WIRE none $FAR --after attempts --until attempts-end proto=58 icmp=128"
for p in $OTHER_PROTOS; do
  expect "far side: no IP protocol $p after the gateway's control" \
    wire none "$FAR" --after attempts --until attempts-end "proto=$p"
done
expect "far side: no TCP to :853 (DoT) from anyone" wire none "$FAR" --until attempts-end proto=6 dport=853
expect "  the DoT and rogue-DNS TCP listeners logged nothing" test ! -s "$TCP_LOG"
expect "far side: no TCP to the attacker's addresses from anyone" \
  bash -c "python3 $WIRE none $FAR --until attempts-end proto=6 dst=$ATTACKER_IP && python3 $WIRE none $FAR --until attempts-end proto=6 dst=$ATTACKER_IP6"
expect "far side: no DNS to the attacker's :53 (UDP or TCP)" wire none "$FAR" --until attempts-end dst="$ATTACKER_IP" dport=53
expect_not "the stand-in resolver never saw the names asked of it directly" grep via- "$W/unbound.log"
expect_not "  nor any query from the sandbox's addresses" grep -E "198\.51\.100\.|$SBX_IP6_NET" "$W/unbound.log"
expect "far side: the only DNS that reached 203.0.113.53 came from the gateway (airlock)" \
  wire none "$FAR" --until attempts-end dst="$DNS_IP" dport=53 "src!=$GW_NET_IP"
expect "the table's forward drop counted the 20 packets the sandbox sent past the gateway (forwarding is on: the table stopped them)" \
  bash -c "ip netns exec $GW nft -j list chain inet $TABLE forward | python3 -c '
import json, sys
n = [e[\"counter\"][\"packets\"] for o in json.load(sys.stdin)[\"nftables\"] if \"rule\" in o
     for e in o[\"rule\"][\"expr\"] if \"counter\" in e]
print(n); sys.exit(0 if n and n[0] >= 20 else 1)'"

# 6. The evidence can fail: without the table (forwarding still on, and a way back for
#    the replies), the same attempts arrive at the far side from the sandbox's addresses.
ip netns exec "$GW" nft delete table inet "$TABLE"
ip -n "$NET" route add 198.51.100.0/24 via "$GW_NET_IP"
ip -n "$NET" -6 route add 2001:db8:51::/64 via "$GW_NET_IP6"
mark open
sbx_send quic "$ATTACKER_IP" 443 >/dev/null
sbx_send quic "$ATTACKER_IP6" 443 >/dev/null
sbx_send echo "$ATTACKER_IP" >/dev/null
sbx_send echo "$ATTACKER_IP6" >/dev/null
for p in $OTHER_PROTOS; do sbx_send raw "$ATTACKER_IP" "$p" >/dev/null; sbx_send raw "$ATTACKER_IP6" "$p" >/dev/null; done
open_dot=$(sbx_send tls "$ATTACKER_IP" 853)
open_dns=$(world_sbx dig +time=2 +tries=1 +short @"$DNS_IP" open-53.airlock.test 2>&1 || true)
open_doh=$(world_sbx curl -sk --max-time 5 "https://$ATTACKER_IP/dns-query?dns=$Q" 2>&1 || true)
mark open-end
expect "without the table: the sandbox's QUIC arrives at the far side, from its address, both families" \
  bash -c "python3 $WIRE some $FAR --after open --until open-end src=$SBX_IP proto=17 dport=443 &&
           python3 $WIRE some $FAR --after open --until open-end src=$SBX_IP6 proto=17 dport=443 &&
           grep -q '^$SBX_IP -> $ATTACKER_IP:443' $UDP_LOG"
expect "  its ICMP and ICMPv6 echo arrive" \
  bash -c "python3 $WIRE some $FAR --after open --until open-end src=$SBX_IP proto=1 icmp=8 &&
           python3 $WIRE some $FAR --after open --until open-end src=$SBX_IP6 proto=58 icmp=128"
for p in $OTHER_PROTOS; do
  expect "  its IP protocol $p arrives, both families" \
    bash -c "python3 $WIRE some $FAR --after open --until open-end src=$SBX_IP proto=$p &&
             python3 $WIRE some $FAR --after open --until open-end src=$SBX_IP6 proto=$p"
done
expect "  its DoT hello reaches the far side's :853 listener, which answers it ($open_dot)" \
  bash -c '[[ $0 == other* ]] && grep -q "^$1:853 " "$2"' "$open_dot" "$ATTACKER_IP" "$TCP_LOG"
expect "  its query reaches the stand-in resolver, which logs the sandbox's address (answer: $open_dns)" \
  bash -c '[[ $0 == "$1" ]] && grep -q "$2 open-53.airlock.test. A IN" "$3"' "$open_dns" "$ATTACKER_IP" "$SBX_IP" "$W/unbound.log"
expect "  its DoH by IP gets the attacker's server, and the far side sees its TLS (answer: ${open_doh:0:40})" \
  bash -c '[[ $0 == "attacker got it" ]] && python3 "$1" some "$2" --after open --until open-end src="$3" dst="$4" dport=443 tls=1' \
  "$open_doh" "$WIRE" "$FAR" "$SBX_IP" "$ATTACKER_IP"

check_summary
