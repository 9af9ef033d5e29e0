# Assertions for the end-to-end tests: each prints "ok" or "FAIL" with the command's output,
# and check_summary prints the closing "N passed, N failed, N skipped" line and sets the exit
# status. A check this machine cannot make (a tool or a kernel feature missing) is reported
# with skip, never as passed and never left out in silence; a test that cannot run at all
# exits 77 instead (ctest's "skipped").
passed=0 failed=0 skipped=0
check_lib=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

pass() { passed=$((passed + 1)); printf 'ok   %s\n' "$1"; }
fail() { failed=$((failed + 1)); printf 'FAIL %s\n' "$1"; }
# skip "description" "why": the check was not made here, and why
skip() { skipped=$((skipped + 1)); printf 'skip %s (%s)\n' "$1" "$2"; }
# expect "description" command...: passes when the command succeeds
expect() { local d=$1; shift; if "$@" >"$W/last.out" 2>&1; then pass "$d"; else fail "$d"; sed 's/^/     /' "$W/last.out"; fi; }
# expect_not "description" command...: passes when the command fails
expect_not() { local d=$1; shift; if "$@" >"$W/last.out" 2>&1; then fail "$d"; sed 's/^/     /' "$W/last.out"; else pass "$d"; fi; }
# line KEY=VALUE...: a decision line with these fields exists (waits for the async writer)
line() { python3 "$check_lib/decisions.py" "$W/decisions.jsonl" "$@"; }
# body_is WANT command...: the command prints exactly WANT
body_is() { local want=$1; shift; [[ "$("$@")" == "$want" ]]; }

check_summary() {
  echo "$passed passed, $failed failed, $skipped skipped"
  [[ $failed -eq 0 ]]
}
