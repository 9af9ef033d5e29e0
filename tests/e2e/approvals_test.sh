#!/usr/bin/env bash
# Approvals: in a policy with `approval:`, a DNS query or connection its rules deny for want
# of a rule is held while an approver (airlock approve, or a program on GET /v1/approvals)
# decides; the held client sees only a delay. allow-once lets exactly one connection
# through (the next is asked again, and denied here); allow-session lets the session's
# through; deny, or no answer within the wait, leaves the denial, said in the line with who
# answered; no approver watching leaves it at once; holds are capped and none outlives its
# wait; a session that ends denies what it held. Answers come from a scripted stdin, from a
# program (--exec) and from a person at a terminal (tmux).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
WORLD_RECORDS="ok.airlock.test 203.0.113.10
new.airlock.test 203.0.113.10
named.airlock.test 203.0.113.10
good.airlock.test 203.0.113.10
bad.airlock.test 203.0.113.10
typed.airlock.test 203.0.113.10"
WORLD_CERT_NAMES="ok.airlock.test new.airlock.test named.airlock.test good.airlock.test bad.airlock.test typed.airlock.test"
source "$here/lib/world.sh"
source "$here/lib/check.sh"
world_up

world_airlock_config cfg-sandbox <<'YAML'
      - host: ok.airlock.test
    approval:
      wait: 4s
YAML
sed -i "s|^  dns: 0.0.0.0:15053|  dns: 0.0.0.0:15053\n  control: $W/control.sock|" "$W/airlock.yaml"
cat >>"$W/airlock.yaml" <<'YAML'
limits:
  session_holds: 100
YAML
expect "the config with approval: checks" "$AIRLOCK" check -c "$W/airlock.yaml"
world_start_airlock -c "$W/airlock.yaml"

api() {  # api METHOD PATH [BODY]: prints the body, then the status on its own line
  curl -sS --max-time 5 --unix-socket "$W/control.sock" -X "$1" \
    ${3:+-H 'Content-Type: application/json' -d "$3"} -w '\n%{http_code}\n' "http://airlock$2"
}
status_is() { [[ $(tail -1 <<<"$1") == "$2" ]]; }
export W
export -f api  # for the checks run with bash -c
stat_of() { api GET /v1/stats | head -1 | python3 -c "import json,sys; print(json.load(sys.stdin)['$1'])"; }
await_stat() {  # await_stat KEY VALUE
  for _ in $(seq 100); do [[ $(stat_of "$1") == "$2" ]] && return 0; sleep 0.05; done
  echo "$1: $(stat_of "$1"), wanted $2"
  return 1
}
# fetch_ms HOST: fetches https://HOST/ by address (no DNS); prints "CODE MS"
fetch_ms() {
  sbx_curl -o /dev/null -w '%{http_code} %{time_total}\n' --resolve "$1:443:203.0.113.10" "https://$1/" 2>/dev/null |
    awk '{printf "%s %d\n", $1, $2 * 1000}' || true
}
# approver NAME [ARGS...]: airlock approve in the background, its stdin from $W/NAME.in (a fifo)
approver() {
  local name=$1
  shift
  rm -f "$W/$name.in"
  mkfifo "$W/$name.in"
  "$AIRLOCK" approve --control "$W/control.sock" --by tester "$@" <"$W/$name.in" >"$W/$name.out" 2>"$W/$name.stderr" &
  WORLD_PIDS+=($!)
  eval "${name}_pid=$!"
  exec {fd}>"$W/$name.in"  # held open: the approver's stdin ends when the test closes it
  eval "${name}_fd=$fd"
}
answer() { echo "$2" >&"$1"; }  # answer FD REPLY

out=$(api POST /v1/sessions '{"id":"task-1","sources":["198.51.100.2/32"],"policy":"sandbox"}')
expect "session task-1 registers (201)" status_is "$out" 201
api PUT /v1/sessions/task-1/context '{"tool_call":"call-7"}' >/dev/null

# --- no approver: nothing is held -----------------------------------------------------------
read -r code ms <<<"$(fetch_ms new.airlock.test)"
expect "with no approver watching, the denial stands at once (${ms} ms)" bash -c "[[ $code != 200 && $ms -lt 1000 ]]"
expect "  its line says nobody was asked" \
  line event=connect name=new.airlock.test verdict=deny reason=host_not_allowed 'notes~=approval_skipped:no_approver'
expect "/v1/approvals?deny=1 is refused by name (400)" bash -c "api GET '/v1/approvals?deny=1' | grep -q \"unknown parameter 'deny'\""

# --- allow-once: one connection, then asked again ---------------------------------------------
approver once --session task-1
expect "an approver is watching" await_stat approvers 1
fetch_ms new.airlock.test >"$W/first.out" &
first=$!
expect "the connection is held: one hold, one question" await_stat approval_holds 1
expect "  the approver is shown who wants what, in which tool call" \
  bash -c "timeout 5 bash -c 'until grep -q \"task-1 wants new.airlock.test:443 in tool call call-7 (a connection)\" \"$W/once.out\"; do sleep 0.05; done'"
expect "  and the denial as tail shows it" grep -q 'DENY host_not_allowed (rule default)' "$W/once.out"
sleep 0.5
answer "$once_fd" o
wait "$first" || true
read -r code ms <"$W/first.out"
expect "allow-once: the held connection goes through (200 after ${ms} ms held)" test "$code" = 200
expect "  its line: grant_allowed by the answer's grant, with who answered and how long it was held" \
  line event=connect name=new.airlock.test verdict=allow reason=grant_allowed 'rule~=grant:g' 'notes~=answer:allow-once' \
  'notes~=answer_by:tester' 'notes~=held_ms:' tool_call=call-7
expect "  the grant's add line names the approval" line event=grant action=add name=new.airlock.test:443 'notes~=approval:a' \
  'notes~=connections:1' 'notes~=by:tester'
expect "  the approver says what it did" grep -q ' allow-once (grant g1); 1 held let go' "$W/once.out"
fetch_ms new.airlock.test >"$W/second.out" &
second=$!
expect "a second connection is held again (the grant was for one)" await_stat approval_holds 1
answer "$once_fd" d
wait "$second" || true
read -r code ms <"$W/second.out"
expect "  denied: the approver said deny ($code after ${ms} ms)" test "$code" != 200
expect "  its line: host_not_allowed, answer:deny by tester" \
  line event=connect name=new.airlock.test verdict=deny reason=host_not_allowed 'notes~=answer:deny' 'notes~=answer_by:tester'

# --- no answer in time: the denial stands at the wait ------------------------------------------
read -r code ms <<<"$(fetch_ms named.airlock.test)"
expect "unanswered, the connection is denied when the 4 s wait ends ($code after ${ms} ms)" \
  bash -c "[[ $code != 200 && $ms -ge 3900 && $ms -lt 6000 ]]"
expect "  its line: answer:none, held about 4 s" \
  python3 "$here/lib/decisions.py" "$W/decisions.jsonl" event=connect name=named.airlock.test verdict=deny 'notes~=answer:none'
expect "  nothing is held any more" await_stat approval_holds 0

# --- DNS: a held lookup answered once ----------------------------------------------------------
world_sbx dig +short +time=8 +tries=1 @"$GW_SBX_IP" typed.airlock.test A >"$W/dig.out" &
dig_pid=$!
expect "a denied lookup is held too" await_stat approval_holds 1
expect "  shown as a DNS lookup" \
  bash -c "timeout 5 bash -c 'until grep -q \"wants typed.airlock.test in tool call call-7 (a DNS lookup)\" \"$W/once.out\"; do sleep 0.05; done'"
answer "$once_fd" o
wait "$dig_pid" || true
expect "  allowed once, the lookup is answered after its delay" grep -qx 203.0.113.10 "$W/dig.out"
expect "  its line: allow, grant_allowed, answer:allow-once" \
  line event=dns name=typed.airlock.test verdict=allow reason=grant_allowed 'notes~=answer:allow-once'
expect "  and the connection that follows uses the grant (no second question)" \
  body_is 200 sbx_curl -o /dev/null -w '%{http_code}' https://typed.airlock.test/
exec {once_fd}>&-  # the approver's stdin ends: it stops
rc=0
wait "$once_pid" || rc=$?
expect "the approver stops at the end of its stdin (exit $rc)" test "$rc" = 0
expect "  and nobody watches any more" await_stat approvers 0

# --- allow-session, answered by a program ---------------------------------------------------
approver prog --session task-1 --exec 'read -r q; case "$AIRLOCK_NAME" in good.*) echo allow-session;; *) echo deny;; esac'
await_stat approvers 1 >/dev/null
read -r code ms <<<"$(fetch_ms good.airlock.test)"
expect "--exec: the program's allow-session lets the connection through ($code, ${ms} ms)" test "$code" = 200
read -r code ms <<<"$(fetch_ms good.airlock.test)"
expect "  and the next ones without asking ($code, ${ms} ms)" bash -c "[[ $code == 200 && $ms -lt 1000 ]]"
read -r code ms <<<"$(fetch_ms bad.airlock.test)"
expect "  its deny denies at once, without waiting out the 4 s ($code, ${ms} ms)" bash -c "[[ $code != 200 && $ms -lt 3000 ]]"
expect "  the lines say the program answered" \
  line event=connect name=bad.airlock.test verdict=deny 'notes~=answer_by:tester'

# --- the API: late, twice, unknown, wrong ---------------------------------------------------
kill "$prog_pid" 2>/dev/null || true
await_stat approvers 0 >/dev/null
out=$(api POST /v1/approvals/a999 '{"answer":"deny"}')
expect "an unknown approval is 404" status_is "$out" 404
out=$(api POST /v1/approvals/a1 '{"answer":"allow-once"}')
expect "an answered one is 409" status_is "$out" 409
out=$(api POST /v1/approvals/a1 '{"answer":"maybe"}')
expect "a wrong answer is 400, naming the answers" bash -c "grep -q 'allow-once, allow-session or deny' <<<'$out' && tail -1 <<<'$out' | grep -qx 400"
expired=$(python3 - "$W/decisions.jsonl" <<'PY'
import json, sys
for l in open(sys.argv[1]):
    o = json.loads(l)
    if o.get("name") == "named.airlock.test" and o.get("event") == "connect":
        print([n for n in o["notes"] if n.startswith("approval:")][0].split(":")[1])
PY
)
out=$(api POST "/v1/approvals/$expired" '{"answer":"allow-once"}')
expect "one whose wait passed is 410, and says what to do instead ($expired)" \
  bash -c "tail -1 <<<'$out' | grep -qx 410 && grep -q 'a grant' <<<'$out'"

# --- a person at a terminal (tmux) ---------------------------------------------------------------
tmux_session="$P-approve"
tmux new-session -d -s "$tmux_session" -x 200 -y 50 \
  "'$AIRLOCK' approve --control '$W/control.sock' --session task-1 --by alice 2>&1 | tee '$W/tty.out'; sleep 30"
await_stat approvers 1 >/dev/null
sbx_curl -o /dev/null -w '%{http_code}\n' --resolve bad.airlock.test:443:203.0.113.10 https://bad.airlock.test/ \
  >"$W/typed.code" 2>/dev/null &
typed=$!
expect "the prompt comes up in the terminal" \
  bash -c "timeout 5 bash -c 'until tmux capture-pane -p -t \"$tmux_session\" | grep -q \"deny \\[D\\]?\"; do sleep 0.1; done'"
tmux capture-pane -p -t "$tmux_session" | grep -v '^$' | sed 's/^/     | /'
tmux send-keys -t "$tmux_session" "maybe" Enter
sleep 0.3
expect "  a reply it does not know is asked again" bash -c "tmux capture-pane -p -t '$tmux_session' | grep -q 'o, s or d?'"
tmux send-keys -t "$tmux_session" "o" Enter
wait "$typed" || true
expect "  the person's allow-once lets the connection through" grep -qx 200 "$W/typed.code"
expect "  and the line says alice answered" \
  line event=connect name=bad.airlock.test verdict=allow 'notes~=answer_by:alice' 'notes~=answer:allow-once'
tmux kill-session -t "$tmux_session" 2>/dev/null || true
await_stat approvers 0 >/dev/null

# --- bounds: 120 connections at once, 100 held at most, none past its wait -------------------
approver bulk --session task-1
await_stat approvers 1 >/dev/null
world_sbx timeout 20 python3 - >"$W/bulk.out" 2>&1 <<'PY' &
import socket, ssl, threading, time
ctx = ssl.create_default_context(); ctx.check_hostname = False; ctx.verify_mode = ssl.CERT_NONE
ended = []
def one(i):
    t = time.monotonic()
    try:
        with socket.create_connection(("203.0.113.10", 443), timeout=15) as s:
            with ctx.wrap_socket(s, server_hostname=f"h{i}.bulk.test"):
                pass
        ended.append(("ok", time.monotonic() - t))
    except Exception:
        ended.append(("denied", time.monotonic() - t))
threads = [threading.Thread(target=one, args=(i,)) for i in range(120)]
for th in threads: th.start()
for th in threads: th.join()
fast = sum(1 for k, d in ended if d < 1.5)
held = sum(1 for k, d in ended if 3.5 <= d < 8)
print(f"ok={sum(1 for k, _ in ended if k == 'ok')} fast={fast} held={held} total={len(ended)}")
PY
bulk=$!
peak=0
for _ in $(seq 40); do
  n=$(stat_of approval_holds)
  ((n > peak)) && peak=$n
  sleep 0.1
done
wait "$bulk" || true
cat "$W/bulk.out"
expect "at most limits.session_holds (100) connections were held at once (peak $peak)" bash -c "(( $peak <= 100 && $peak >= 90 ))"
expect "  the 20 beyond were denied at once, the held ones at their wait, none let through" \
  grep -Eq '^ok=0 fast=2[0-9] held=(9[0-9]|100) total=120$' "$W/bulk.out"
expect "  their lines say why the 20 were not held" \
  python3 "$here/lib/decisions.py" "$W/decisions.jsonl" --count 20 event=connect 'name~=bulk.test' \
  'notes~=approval_skipped:limit:session_holds'
expect "  and nothing is held once the wait has passed" await_stat approval_holds 0

# --- the session's end denies what it holds ------------------------------------------------
fetch_ms new.airlock.test >"$W/ended.out" &
ended_pid=$!
await_stat approval_holds 1 >/dev/null
api DELETE /v1/sessions/task-1 >/dev/null
wait "$ended_pid" || true
read -r code ms <"$W/ended.out"
expect "removing the session ends its hold at once with a denial ($code, ${ms} ms)" bash -c "[[ $code != 200 && $ms -lt 3000 ]]"
expect "  said in the line" line event=connect name=new.airlock.test 'notes~=answer_by:session_closed'
check_summary
