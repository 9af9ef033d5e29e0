#!/usr/bin/env bash
# The world's sanitizer check can fail: a planted AddressSanitizer, LeakSanitizer or UBSan
# report in a file of the world is found (world_down would then fail the test), and files
# without one are not.
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
check_summary
