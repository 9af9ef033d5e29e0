#!/usr/bin/env bash
# The live view: `airlock tail` (and GET /v1/decisions under it) shows each decision as it
# is made: a denial within a second of the daemon deciding it, the same JSON line the log
# has with --json, only denials with --deny, only one session with --session, the explain
# rendering without --json; a bad query is refused by name; a watcher that stops reading
# costs the daemon nothing (its lines are dropped, counted, and it is cut); at most 16
# streams at once; and when the daemon stops, tail says so and exits 1.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
WORLD_RECORDS="ok.airlock.test 203.0.113.10
denied.airlock.test 203.0.113.10"
WORLD_CERT_NAMES="ok.airlock.test denied.airlock.test"
source "$here/lib/world.sh"
source "$here/lib/check.sh"
world_up

world_airlock_config sandbox-a <<'YAML'
      - host: ok.airlock.test
YAML
sed -i "s|^  dns: 0.0.0.0:15053|  dns: 0.0.0.0:15053\n  control: $W/control.sock|" "$W/airlock.yaml"
world_start_airlock -c "$W/airlock.yaml"
api() { curl -sS --max-time 5 --unix-socket "$W/control.sock" "$@"; }
watchers() { api http://airlock/v1/stats | python3 -c 'import json,sys; print(json.load(sys.stdin)["decision_watchers"])'; }
await_watchers() {  # await_watchers N: the daemon counts N live streams
  for _ in $(seq 100); do [[ $(watchers) == "$1" ]] && return 0; sleep 0.05; done
  echo "watchers: $(watchers), wanted $1"
  return 1
}
tail_bg() {  # tail_bg NAME ARGS...: airlock tail in the background, output in $W/NAME.out
  local name=$1
  shift
  "$AIRLOCK" tail --control "$W/control.sock" "$@" >"$W/$name.out" 2>"$W/$name.stderr" &
  WORLD_PIDS+=($!)
  eval "${name//-/_}_pid=$!"
}

expect "nobody watching: 0 watchers" test "$(watchers)" = 0
tail_bg deny-json --deny --json
tail_bg all-text
tail_bg other-session --session nobody-else
# On a terminal (script(1) gives it one), in colour.
script -qfec "'$AIRLOCK' tail --control '$W/control.sock' --deny" "$W/tty.out" >/dev/null 2>&1 &
WORLD_PIDS+=($!)
tty_pid=$!
expect "four tails are four live streams" await_watchers 4

# A denial, and when the tail saw it against when the daemon decided it (its line's ts).
seen_after_ms() {  # seen_after_ms FILE PATTERN: ms from the line's ts to the moment it is in FILE
  local deadline=$((SECONDS + 5))
  while ((SECONDS < deadline)); do
    if grep -q "$1" -e "$2"; then
      python3 - "$(date +%s.%N)" "$(grep -m1 -e "$2" "$1")" <<'PY'
import datetime, json, sys
now, line = float(sys.argv[1]), json.loads(sys.argv[2])
ts = datetime.datetime.strptime(line["ts"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=datetime.timezone.utc)
print(int((now - ts.timestamp()) * 1000))
PY
      return 0
    fi
    sleep 0.02
  done
  echo "never"
}
# The sandbox's DNS would not name it: the connection goes to the address directly.
sbx_curl -o /dev/null --resolve denied.airlock.test:443:203.0.113.10 https://denied.airlock.test/ 2>/dev/null || true
late=$(seen_after_ms "$W/deny-json.out" '"event":"connect".*"name":"denied.airlock.test"')
expect "tail --json shows the denial within a second of the decision (${late} ms)" \
  bash -c "[[ '$late' =~ ^[0-9]+$ ]] && (( $late < 1000 ))"
sbx_curl -o /dev/null https://ok.airlock.test/
expect "the allowed fetch is in the full tail" bash -c "timeout 5 bash -c 'until grep -q \"allow.*ok.airlock.test\\|ok.airlock.test.*allow\" \"$W/all-text.out\"; do sleep 0.05; done'"
line event=connect name=ok.airlock.test verdict=allow >/dev/null
world_sbx dig +short +time=3 +tries=1 @"$GW_SBX_IP" -p 53 denied.airlock.test A >/dev/null || true
line event=dns name=denied.airlock.test >/dev/null

# The log now has everything; every --deny line is a log line, byte for byte, and a denial.
sleep 0.3
expect "--json lines are the log's own lines, byte for byte" \
  python3 -c '
import sys
tail = [l for l in open(sys.argv[1]).read().splitlines() if l]
log = set(open(sys.argv[2]).read().splitlines())
missing = [l for l in tail if l not in log]
print(len(tail), "tail lines,", len(missing), "not in the log:", missing[:2])
sys.exit(1 if missing or not tail else 0)' "$W/deny-json.out" "$W/decisions.jsonl"
expect "--deny shows only denials (and the DNS denial too)" \
  python3 -c '
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
verdicts = {l["verdict"] for l in lines}
events = {l["event"] for l in lines}
print(verdicts, events)
sys.exit(0 if verdicts <= {"deny", "audit-deny"} and {"connect", "dns"} <= events else 1)' "$W/deny-json.out"
expect "the text tail renders as explain does: DENY, the reason and the rule" \
  grep -E "sandbox-a connect tls denied\.airlock\.test 203\.0\.113\.10:443; DENY host_not_allowed \(rule default\)$" "$W/all-text.out"
expect "  and the allowed connection with its rule" \
  grep -E "sandbox-a connect tls ok\.airlock\.test 203\.0\.113\.10:443; allow host_allowed \(rule $W/airlock\.yaml:[0-9]+\)$" "$W/all-text.out"
expect "  and no colour when the output is not a terminal" bash -c "! grep -q $'\x1b' '$W/all-text.out'"
expect "  on a terminal, DENY in red" grep -q $'\x1b\\[1;31mDENY\x1b\\[0m host_not_allowed' "$W/tty.out"
kill "$tty_pid" 2>/dev/null || true
expect "  and that tail's stream ends when it does" await_watchers 3
expect "--session shows nothing of another session" test ! -s "$W/other-session.out"

refusal() {  # refusal STATUS QUERY WANT: the daemon answers STATUS with WANT in its error
  local out
  out=$(curl -sS --max-time 5 --unix-socket "$W/control.sock" -w ' %{http_code}' "http://airlock/v1/decisions?$2")
  echo "$out"
  [[ $out == *"$3"*" $1" ]]
}
expect "a bad query is refused by name (400)" refusal 400 verdict=deny "unknown parameter 'verdict'"
expect "  an empty session too" refusal 400 session= "session: expected a session id"
expect "tail --session '' is a usage error (exit 2)" \
  bash -c "'$AIRLOCK' tail --control '$W/control.sock' --session ''; test \$? = 2"
expect "tail --help says what it does" bash -c "'$AIRLOCK' tail --help | grep -q 'as they are made'"

# Two watchers stop reading while 3,000 queries a second come for 3 s (about 9,000 lines):
# one for 6 s, then reads again: it lost what its 4,096 lines could not hold, and is told
# how many; the other for 16 s: the daemon cut it (a write that did not complete in 10 s).
# The sandbox's lookups go on meanwhile, and the tails that keep up lose nothing.
python3 "$here/lib/stalled_reader.py" "$W/control.sock" 6 3 >"$W/slow.out" 2>&1 &
slow=$!
python3 "$here/lib/stalled_reader.py" "$W/control.sock" 16 3 >"$W/stalled.out" 2>&1 &
stalled=$!
expect "two more watchers are live streams" await_watchers 5
world_sbx timeout 20 python3 "$here/lib/flood.py" 203.0.113.10:443 0 0 3 "$GW_SBX_IP" 3000 >"$W/flood.out" 2>&1 || true
expect "  the daemon answers on: the sandbox resolves right after" \
  body_is 203.0.113.10 world_sbx dig +short +time=3 +tries=1 @"$GW_SBX_IP" ok.airlock.test A
wait "$slow" "$stalled" || true
cat "$W/flood.out" "$W/slow.out" "$W/stalled.out"
expect "  the slow reader was told what it lost (tail_dropped), and kept its stream" \
  grep -Eq 'eof=0 dropped=[1-9][0-9]* lines=[1-9]' "$W/slow.out"
expect "  the stalled one was cut" grep -q 'eof=1' "$W/stalled.out"
expect "  the three tails are still live" await_watchers 3
expect "  and the text tail lost nothing (it kept up)" bash -c "! grep -q 'lines lost' '$W/all-text.stderr'"
same_count() {  # the text tail has a line for every decision the log has (sessions aside)
  local shown logged
  for _ in $(seq 60); do
    shown=$(grep -vc ' session open\| session close' "$W/all-text.out" || true)
    logged=$(grep -v '"event":"session"' "$W/decisions.jsonl" | grep -vc '"event":"log_dropped"' || true)
    [[ $shown == "$logged" ]] && return 0
    sleep 0.05
  done
  echo "tail: $shown lines, log: $logged"
  return 1
}
expect "  it has a line for each of the log's decisions" same_count

# At most 16 streams: 13 more beside the three tails fill them, the 17th is refused (503,
# said why), and the launchers' half of the control socket still answers.
extra=()
for _ in $(seq 13); do
  curl -sN --max-time 60 --unix-socket "$W/control.sock" -o /dev/null http://airlock/v1/decisions &
  extra+=($!)
  WORLD_PIDS+=($!)
done
expect "sixteen streams open" await_watchers 16
expect "  a seventeenth is refused with 503, saying why" refusal 503 deny=0 "decision streams are open already"
expect "  the control API still answers the rest" \
  bash -c "curl -sS --max-time 5 --unix-socket '$W/control.sock' http://airlock/v1/sessions | grep -q sandbox-a"
kill "${extra[@]}" 2>/dev/null || true
expect "  and the streams close with their clients" await_watchers 3

# The daemon stops: every tail says so and exits 1.
world_stop_airlock
for name in deny_json all_text other_session; do
  pid_var=${name}_pid
  status=0
  for _ in $(seq 100); do kill -0 "${!pid_var}" 2>/dev/null || break; sleep 0.05; done
  wait "${!pid_var}" || status=$?
  expect "tail ($name) exits 1 when the daemon stops" test "$status" = 1
done
expect "  and says the daemon ended the stream" grep -q 'ended the stream' "$W/deny-json.stderr"
check_summary
