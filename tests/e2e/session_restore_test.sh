#!/usr/bin/env bash
# A restart never widens a sandbox. The config binds every source to a permissive policy
# (as the shipped default's 0.0.0.0/0 does); a sandbox registered through the control API
# under a closed policy keeps that policy across kill -9 and across SIGTERM, because the
# registered sessions are kept beside the control socket (mode 0600) and restored before
# the first packet is judged. A session whose policy left the config is held: its traffic
# is denied session_unknown, never handed to the catch-all.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
WORLD_RECORDS="open.airlock.test 203.0.113.10"
WORLD_CERT_NAMES="open.airlock.test"
source "$here/lib/world.sh"
source "$here/lib/check.sh"
world_up

cat >"$W/airlock.yaml" <<YAML
version: 1
listen:
  proxy: 0.0.0.0:15001
  dns: 0.0.0.0:15053
  control: $W/run/control.sock
upstream_dns: [$DNS_IP]
log:
  decisions: $W/decisions.jsonl
policies:
  everything:
    allow:
      - host: open.airlock.test
  closed:
    allow:
      - host: nothing.airlock.test
sessions:
  - id: catch-all
    source: 0.0.0.0/0
    policy: everything
YAML
mkdir -p "$W/run"
world_start_airlock -c "$W/airlock.yaml"

api() { ip netns exec "$GW" curl -sS --max-time 5 --unix-socket "$W/run/control.sock" -o /dev/null -w '%{http_code}' "$@"; }
fetch() { body_is "origin says hello to open.airlock.test" sbx_curl --max-time 5 https://open.airlock.test/; }
stop_airlock() {  # stop_airlock SIGNAL: stops it and takes its pid off the world's list
  # A clean stop must exit 0 (world_stop_airlock fails the test otherwise); a kill is a crash.
  if [[ $1 == TERM ]]; then
    world_stop_airlock
    return
  fi
  kill "-$1" "$AIRLOCK_PID"
  wait "$AIRLOCK_PID" 2>/dev/null || true
  local alive=() pid
  for pid in "${WORLD_PIDS[@]}"; do [[ $pid == "$AIRLOCK_PID" ]] || alive+=("$pid"); done
  WORLD_PIDS=("${alive[@]}")
}

expect "the catch-all lets the sandbox fetch (the control)" fetch
expect "a sandbox session registers under the closed policy (201)" test "$(api -X POST -H 'Content-Type: application/json' \
  http://airlock/v1/sessions -d '{"id":"sbx-closed","sources":["'"$SBX_IP"'/32"],"policy":"closed","labels":{"task":"t-1"}}')" = 201
expect_not "  now the same fetch is denied" fetch
expect "  by its session's policy, at the name" line event=dns session=sbx-closed name=open.airlock.test verdict=deny \
  reason=host_not_allowed
expect "the sessions file is private (0600)" test "$(stat -c %a "$W/run/sessions.json")" = 600
expect "  and names the session" grep -q '"sbx-closed"' "$W/run/sessions.json"

for how in KILL TERM; do
  stop_airlock "$how"
  world_start_airlock -c "$W/airlock.yaml"
  expect "after SIG$how and a restart, the session is back" grep -q "restored 1 registered session" "$W/airlock.stderr"
  expect_not "  and the fetch is still denied" fetch
  expect_not "  also by a hard-coded address" \
    sbx_curl --max-time 5 --resolve "open.airlock.test:443:$ORIGIN_IP" https://open.airlock.test/
  expect "  under the session, never the catch-all (whose only allow is the control's)" \
    line --count 1 session=catch-all verdict=allow event=connect --wait 1
done
expect "its labels came back with it" line event=connect session=sbx-closed 'labels~="task": "t-1"' verdict=deny \
  reason=host_not_allowed

# The closed policy leaves the config; the session cannot be registered again: held.
sed -i '/^  closed:$/,/nothing.airlock.test$/d' "$W/airlock.yaml"
stop_airlock TERM
world_start_airlock -c "$W/airlock.yaml"
expect "a session whose policy is gone is held, and says so" grep -q "session 'sbx-closed' held" "$W/airlock.stderr"
expect "  its DNS is refused" bash -c "ip netns exec $SBX dig +time=2 +tries=1 open.airlock.test | grep -q 'status: REFUSED'"
expect "  the query denied session_unknown, under its own id" line event=dns session=sbx-closed reason=session_unknown
expect_not "  a connection by address reaches nothing" \
  sbx_curl --max-time 5 --resolve "open.airlock.test:443:$ORIGIN_IP" https://open.airlock.test/
expect "  denied session_unknown" line event=connect session=sbx-closed verdict=deny reason=session_unknown
expect "removing the held session (200)" test "$(api -X DELETE http://airlock/v1/sessions/sbx-closed)" = 200
expect "  gives the source back to the config's binding" fetch

# A sessions file that is not airlock's is kept aside, never silently overwritten.
stop_airlock TERM
echo 'not json' >"$W/run/sessions.json"
world_start_airlock -c "$W/airlock.yaml"
expect "an unreadable sessions file is named on stderr" grep -q "sessions.json: not JSON" "$W/airlock.stderr"
expect "  and kept for a person to read" grep -qx 'not json' "$W/run/sessions.json.unreadable"
stop_airlock TERM
check_summary
