#!/usr/bin/env bash
# The world's own checks can fail: a planted AddressSanitizer, LeakSanitizer or UBSan report
# in a file of the world is found (world_down then fails the test), files without one are
# not; and world_down fails a test whose daemon does not exit 0 on SIGTERM.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib/world.sh"
source "$here/lib/check.sh"
trap 'rm -rf "$W"' EXIT
mkdir -p "$W"
echo "airlock: ready" >"$W/airlock.stderr"
echo "airlock: session s-1 started" >"$W/run.err"
expect "files without a report pass" world_sanitizers
for report in "==7==ERROR: AddressSanitizer: heap-use-after-free on address 0x602" \
  "==7==ERROR: LeakSanitizer: detected memory leaks" \
  "proxy/relay.cpp:12:3: runtime error: signed integer overflow"; do
  echo "$report" >"$W/run.err"
  expect_not "a report is found: ${report:0:40}" world_sanitizers
done
# world_down with a stand-in daemon that answers SIGTERM with STATUS, in a world of its own.
down_with_daemon_status() {
  (
    W=$(mktemp -d)
    bash -c "sleep 30 & trap 'kill \$!; exit $1' TERM; wait" &
    AIRLOCK_PID=$!
    WORLD_PIDS=("$AIRLOCK_PID")
    sleep 0.2
    world_down
  ) >/dev/null 2>&1
}
expect "world_down passes a daemon that exits 0 on SIGTERM" down_with_daemon_status 0
expect_not "world_down fails one that exits 3" down_with_daemon_status 3
check_summary
