#!/usr/bin/env bash
# Protocol per port: an address handed out for a name allowed on 443 carries TLS naming
# that name, and 80 HTTP naming it, nothing else. ssh-like bytes, a TLS hello without a
# server name, or plain HTTP on :443, and opaque bytes on :80, are refused with
# protocol_not_allowed in the channel's own language; a far-side host on each address
# logs every byte that reaches it, and logs nothing for them. Opaque TCP stays allowed
# where a rule lists the port (ssh on 22) or widens it ({port: 443, protocol: any}).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)

TLS_IP=203.0.113.77 WIDE_IP=203.0.113.78 SSH_IP=203.0.113.79
WORLD_RECORDS="tls.airlock.test $TLS_IP
wide.airlock.test $WIDE_IP
ssh.airlock.test $SSH_IP"
WORLD_CERT_NAMES="tls.airlock.test"  # (nginx needs a certificate; the far side here is no TLS server)
source "$here/lib/world.sh"
source "$here/lib/check.sh"
world_up
for a in $TLS_IP $WIDE_IP $SSH_IP; do ip -n "$NET" addr add "$a/24" dev "$P-n0"; done

FAR=$W/far.log
: >"$FAR"
ip netns exec "$NET" python3 "$here/lib/far_side.py" "$FAR" 150 \
  $TLS_IP:443 $TLS_IP:80 $WIDE_IP:443 $SSH_IP:22 $SSH_IP:443 &
WORLD_PIDS+=($!)
world_wait_listen "$NET" t 22

world_airlock_config e2e-protocols <<'YAML'
      - host: tls.airlock.test
      - host: wide.airlock.test
        ports: [{port: 443, protocol: any}]
      - host: ssh.airlock.test
        ports: [22]
YAML
world_start_airlock -c "$W/airlock.yaml"

speak() { world_sbx timeout 15 python3 "$here/lib/speak.py" "$@"; }
far_count() { grep -c "^$1 " "$FAR" || true; }

# The sandbox asks airlock's DNS first: each address is then bound to its name.
for n in tls wide ssh; do
  expect "$n.airlock.test resolves through airlock" test -n "$(world_sbx dig +short "$n.airlock.test")"
done

# 1. TLS naming the host on 443 and a request naming it on 80 reach the far side.
expect "TLS naming tls.airlock.test reaches :443 (the far side is no TLS server)" \
  bash -c "ip netns exec $SBX timeout 15 python3 $here/lib/speak.py $TLS_IP 443 tls-sni tls.airlock.test | grep -q tls-refused"
expect "  its hello arrived at the far side" test "$(far_count $TLS_IP:443)" -eq 1
expect "  its line: allow, tls" line event=connect proto=tls name=tls.airlock.test verdict=allow dst=$TLS_IP:443
speak $TLS_IP 80 http tls.airlock.test >/dev/null || true  # (the far side answers no HTTP: airlock refuses its reply)
expect "HTTP naming tls.airlock.test on :80 reaches the far side" test "$(far_count $TLS_IP:80)" -eq 1
expect "  its line: allow, http" line event=connect proto=http name=tls.airlock.test verdict=allow dst=$TLS_IP:80

# 2. What 443 and 80 do not carry, towards the same addresses.
before443=$(far_count $TLS_IP:443)
before80=$(far_count $TLS_IP:80)
# Opaque bytes have no words for "denied": the refusal is a TCP reset, before any byte (speak.py
# prints "reset" only when its first read fails with ECONNRESET; "closed" is a FIN).
expect "ssh-like bytes to :443 are answered with a reset, no byte before it" body_is reset speak $TLS_IP 443 opaque
expect "  denied protocol_not_allowed, spoke:opaque, by the rule it would need" \
  line event=connect proto=tcp dst=$TLS_IP:443 verdict=deny reason=protocol_not_allowed name=tls.airlock.test \
  'notes~=spoke:opaque' 'notes~=name_from_dns_answer' "rule=$W/airlock.yaml:11"
expect "a TLS hello without a server name to :443 is refused" \
  bash -c "ip netns exec $SBX timeout 15 python3 $here/lib/speak.py $TLS_IP 443 tls-nosni | grep -q tls-refused"
expect "  denied protocol_not_allowed, spoke:tls_without_sni" \
  line event=connect proto=tls dst=$TLS_IP:443 verdict=deny reason=protocol_not_allowed 'notes~=spoke:tls_without_sni'
expect "plain HTTP to :443 naming the host gets 403" body_is "HTTP/1.1 403 Forbidden" \
  speak $TLS_IP 443 http tls.airlock.test
expect "  denied protocol_not_allowed, spoke:http" \
  line event=connect proto=http dst=$TLS_IP:443 verdict=deny reason=protocol_not_allowed 'notes~=spoke:http'
expect "curl's plain HTTP to https's port says why" \
  bash -c "ip netns exec $SBX curl -sS --max-time 10 -D - -o /dev/null http://tls.airlock.test:443/ | grep -qi '^x-airlock-reason: protocol_not_allowed'"
expect "ssh-like bytes to :80 are answered with a reset, no byte before it" body_is reset speak $TLS_IP 80 opaque
expect "  denied protocol_not_allowed, spoke:opaque" \
  line event=connect proto=tcp dst=$TLS_IP:80 verdict=deny reason=protocol_not_allowed 'notes~=spoke:opaque'
expect "none of them reached the far side's :443" test "$(far_count $TLS_IP:443)" -eq "$before443"
expect "none of them reached the far side's :80" test "$(far_count $TLS_IP:80)" -eq "$before80"

# 3. Opaque TCP where a rule lists the port, or widens 443 on purpose.
expect "ssh-like bytes to ssh.airlock.test:22 reach the far side" body_is "far:SSH-2.0-sandbox" speak $SSH_IP 22 opaque
expect "  its line: allow, tcp, named from the DNS answer" \
  line event=connect proto=tcp name=ssh.airlock.test dst=$SSH_IP:22 verdict=allow 'notes~=name_from_dns_answer'
expect "but not to its :443 (port_not_allowed): a reset, no byte before it" body_is reset speak $SSH_IP 443 opaque
expect "  its line: deny, port_not_allowed" \
  line event=connect proto=tcp dst=$SSH_IP:443 verdict=deny reason=port_not_allowed name=ssh.airlock.test
expect "  nothing reached ssh.airlock.test's :443" test "$(far_count $SSH_IP:443)" -eq 0
expect "opaque bytes on a widened :443 (protocol: any) reach the far side" body_is "far:SSH-2.0-sandbox" \
  speak $WIDE_IP 443 opaque
expect "  its line: allow, tcp" line event=connect proto=tcp name=wide.airlock.test dst=$WIDE_IP:443 verdict=allow
expect "a TLS hello without a server name passes a widened :443 too" \
  bash -c "ip netns exec $SBX timeout 15 python3 $here/lib/speak.py $WIDE_IP 443 tls-nosni | grep -q tls-refused"
expect "  and reached the far side" test "$(far_count $WIDE_IP:443)" -eq 2

# 4. airlock test shows the same, offline.
expect "airlock test: opaque on :443 is protocol_not_allowed" bash -c \
  "'$AIRLOCK' test -c '$W/airlock.yaml' --policy sandbox --speaks opaque tls.airlock.test:443 | grep -q '^deny protocol_not_allowed'"
expect "airlock test: the widened port says protocol=any" bash -c \
  "'$AIRLOCK' test -c '$W/airlock.yaml' --policy sandbox wide.airlock.test:443 | grep -q 'protocol=any$'"

kill "$AIRLOCK_PID"
status=0
wait "$AIRLOCK_PID" || status=$?
expect "airlock exits 0 on SIGTERM" test "$status" -eq 0
check_summary
