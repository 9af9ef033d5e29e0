#!/usr/bin/env bash
# DNS over TCP against careless and hostile clients (RFC 7766): a length of zero, a prefix
# then silence, a connection that asks nothing, 1,000 queries pipelined in one write, one
# query past the per-connection cap, and the per-session and per-listener connection caps.
# Each end that leaves a query unanswered is a `dns` line naming why (so it is counted in
# /metrics), within the configured idle time; a client that is done ends without one; UDP
# answers throughout.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
WORLD_RECORDS="ok.airlock.test 203.0.113.10"
WORLD_CERT_NAMES="ok.airlock.test"
source "$here/lib/world.sh"
source "$here/lib/check.sh"
world_up
OTHER_IP=198.51.100.3
ip -n "$SBX" addr add "$OTHER_IP/24" dev "$P-s0"
world_airlock_config tcp-sandbox <<'YAML'
      - host: ok.airlock.test
YAML
cat >>"$W/airlock.yaml" <<YAML
  - id: other-sandbox
    source: $OTHER_IP/32
    policy: sandbox
dns:
  queries_per_second: 100000
  burst: 100000
  tcp_idle: 2s
  tcp_connections: 6
  session_tcp_connections: 4
  tcp_queries_per_connection: 1000
YAML
sed -i "s/^  dns: 0.0.0.0:15053$/  dns: 0.0.0.0:15053\n  admin: 127.0.0.1:9901/" "$W/airlock.yaml"
world_start_airlock -c "$W/airlock.yaml"
tcp() { world_sbx timeout 30 python3 "$here/lib/dns_tcp.py" "$GW_SBX_IP" "$@"; }
fact() { sed -n "s/.*\b$1=\([^ ]*\).*/\1/p" <<<"$2"; }
# within LOW HIGH SECONDS: LOW <= SECONDS <= HIGH
within() { python3 -c "import sys; sys.exit(not ($1 <= float('$3') <= $2))"; }
# metric_sum NAME LABEL...: the sum of NAME's series that carry every LABEL (key="value").
metric_sum() {
  local name=$1
  shift
  ip netns exec "$GW" curl -s --max-time 5 http://127.0.0.1:9901/metrics |
    awk -v name="$name{" -v labels="$*" '
      index($0, name) == 1 { n = split(labels, want, " "); ok = 1
        for (i = 1; i <= n; i++) if (index($0, want[i]) == 0) ok = 0
        if (ok) sum += $NF }
      END { print sum + 0 }'
}

out=$(tcp zero)
expect "a length of zero: the connection is closed at once ($out)" within 0 1 "$(fact closed_after "$out")"
expect "  with a dns line: dns_malformed, dns_tcp:length_zero, the session named" \
  line event=dns client="$SBX_IP:$(fact port "$out")" verdict=deny reason=dns_malformed \
  notes~=dns_tcp:length_zero session=tcp-sandbox

out=$(tcp partial)
expect "a length prefix, part of a query, then silence: closed after tcp_idle ($out)" \
  within 1.5 5 "$(fact closed_after "$out")"
expect "  with a line: timeout, dns_tcp:partial_query" \
  line event=dns client="$SBX_IP:$(fact port "$out")" reason=timeout notes~=dns_tcp:partial_query

out=$(tcp quiet)
expect "a connection that asks nothing: closed after tcp_idle ($out)" within 1.5 5 "$(fact closed_after "$out")"
expect "  with a line: timeout, dns_tcp:no_query" \
  line event=dns client="$SBX_IP:$(fact port "$out")" reason=timeout notes~=dns_tcp:no_query

out=$(tcp pipeline 1000 ok.airlock.test)
port=$(fact port "$out")
expect "1,000 pipelined queries: all answered, in order ($out)" test "$(fact answers "$out")/$(fact in_order "$out")" = 1000/1
expect "  one allowed dns line for each" line --count 1000 event=dns client="$SBX_IP:$port" verdict=allow
expect "  and a client that stops after its queries ends without a deny line" \
  line --count 0 --wait 3 event=dns client="$SBX_IP:$port" verdict=deny

out=$(tcp pipeline 1001 ok.airlock.test)
port=$(fact port "$out")
expect "1,001 pipelined: 1,000 answered, then the connection is closed ($out)" \
  test "$(fact answers "$out")/$(fact closed "$out")" = 1000/1
expect "  the one past the cap has its line: limit:dns_tcp_queries_per_connection" \
  line --count 1 event=dns client="$SBX_IP:$port" reason=limit_exceeded notes~=limit:dns_tcp_queries_per_connection

# The caps: 4 per session, 6 on the listener. The sandbox holds 4 and a 5th is refused at
# once; the other session still gets 2, and then the listener is full for it too.
tcp hold 5 4 >"$W/hold-a.out" &
hold_a=$!
sleep 1
out_b=$(SRC=$OTHER_IP tcp hold 3 0.5)
wait "$hold_a" || true
out_a=$(cat "$W/hold-a.out")
expect "one session past session_tcp_connections (4): the 5th is closed at accept ($out_a)" \
  test "$(fact refused "$out_a")/$(fact held "$out_a")" = 1/4
expect "  its line: limit:session_dns_tcp_connections" \
  line --count 1 event=dns session=tcp-sandbox reason=limit_exceeded notes~=limit:session_dns_tcp_connections
expect "another session gets the listener's last 2 places, its 3rd is refused ($out_b)" \
  test "$(fact refused "$out_b")/$(fact held "$out_b")" = 1/2
expect "  its line: limit:dns_tcp_connections, naming the other session" \
  line --count 1 event=dns session=other-sandbox reason=limit_exceeded notes~=limit:dns_tcp_connections
expect "UDP answers while TCP is full" \
  test "$(world_sbx dig +time=3 +tries=1 @"$GW_SBX_IP" ok.airlock.test A +short)" = 203.0.113.10
# The sandbox's 4 held past tcp_idle, the other session's 2 closed by their client first.
expect "the 4 held until tcp_idle end with dns_tcp:no_query lines (5 with the first); those their client closed, none" \
  line --count 5 --wait 8 event=dns reason=timeout notes~=dns_tcp:no_query

# Every end above is counted where operators look.
count=$(metric_sum airlock_decisions_total 'event="dns"' 'reason="limit_exceeded"')
expect "/metrics counts the refusals (limit_exceeded: $count)" test "${count:-0}" -ge 3
count=$(metric_sum airlock_decisions_total 'event="dns"' 'reason="timeout"')
expect "/metrics counts the quiet ends (timeout: $count)" test "${count:-0}" -ge 6
expect "a query over TCP still works after all of it" \
  test "$(world_sbx dig +tcp +time=3 +tries=1 @"$GW_SBX_IP" ok.airlock.test A +short)" = 203.0.113.10
check_summary
