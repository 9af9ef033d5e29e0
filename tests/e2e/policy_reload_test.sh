#!/usr/bin/env bash
# SIGHUP: a good policy file is swapped in whole (decisions name the new version), a bad
# one is refused with FILE:LINE:COL and the running policy stays, and the decision log is
# reopened so it can be rotated. Real unbound upstream, real dig, in namespaces.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
WORLD_RECORDS="allowed.airlock.test 203.0.113.10
later.airlock.test 203.0.113.10"
WORLD_CERT_NAMES="allowed.airlock.test"
source "$here/lib/world.sh"
source "$here/lib/check.sh"
world_up

write_policy() { for h in "$@"; do echo "      - host: $h"; done | world_airlock_config reload-sandbox; }
write_policy allowed.airlock.test
world_start_airlock -c "$W/airlock.yaml"

status_of() { world_sbx dig +time=3 +tries=1 @"$GW_SBX_IP" "$1" | sed -n 's/.*status: \([A-Z]*\).*/\1/p'; }
version_of() { line event=dns name="$1" | tail -1 | python3 -c 'import json,sys; print(json.loads(sys.stdin.read())["policy_version"])'; }
hup_and_wait() {  # sends SIGHUP and waits (bounded) for airlock to report the outcome
  local before
  before=$(grep -c 'reload' "$W/airlock.stderr" || true)
  kill -HUP "$AIRLOCK_PID"
  for _ in $(seq 100); do
    [[ $(grep -c 'reload' "$W/airlock.stderr" || true) -gt $before ]] && return 0
    sleep 0.05
  done
  return 1
}

expect "before reload: later.airlock.test is denied" test "$(status_of later.airlock.test)" = NXDOMAIN
v1=$(version_of later.airlock.test)

write_policy allowed.airlock.test later.airlock.test
expect "SIGHUP with a good file is reported" hup_and_wait
expect "  the new policy is in force: later.airlock.test resolves" test "$(status_of later.airlock.test)" = NOERROR
v2=$(version_of later.airlock.test)
expect "  its decision names the new version ($v1 -> $v2)" test -n "$v2" -a "$v1" != "$v2"

printf 'version: 1\npolicies:\n  sandbox:\n    allow:\n      - hots: x\n' >"$W/airlock.yaml"
expect "SIGHUP with a bad file is reported" hup_and_wait
expect "  with FILE:LINE:COL" grep -q "airlock.yaml:5:9: unknown key 'hots'" "$W/airlock.stderr"
expect "  and the running policy stays" test "$(status_of later.airlock.test)" = NOERROR
expect "  its decisions still name version $v2" test "$(version_of later.airlock.test)" = "$v2"

write_policy allowed.airlock.test
mv "$W/decisions.jsonl" "$W/decisions.jsonl.1"
expect "SIGHUP after rotation" hup_and_wait
status_of allowed.airlock.test >/dev/null
expect "  the log is reopened: new decisions land in a new file" line event=dns name=allowed.airlock.test
expect "  and the rotated file kept the old ones" grep -q later.airlock.test "$W/decisions.jsonl.1"

check_summary
