#!/usr/bin/env bash
# Grants: a session given a host at run time (POST /v1/sessions/ID/grants, airlock grant)
# reaches exactly that host, on exactly its ports, for exactly its scope: until the tool call
# ends, for a time, for N connections, or for the session; every connection it allows says
# grant_allowed with rule grant:ID; it never overrides a deny rule or reaches a private
# address; a grant that ends (tool call, expiry, revoke, session) cuts the connections it
# let through, each with a grant_ended line; and 1,000 grants stay within their caps.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
WORLD_RECORDS="ok.airlock.test 203.0.113.10
granted.airlock.test 203.0.113.10
sub.granted.airlock.test 203.0.113.10
other.airlock.test 203.0.113.10
blocked.airlock.test 203.0.113.10
inner.airlock.test 10.1.2.3"
WORLD_CERT_NAMES="ok.airlock.test granted.airlock.test sub.granted.airlock.test other.airlock.test blocked.airlock.test"
source "$here/lib/world.sh"
source "$here/lib/check.sh"
world_up

world_airlock_config cfg-sandbox <<'YAML'
      - host: ok.airlock.test
    deny:
      - host: blocked.airlock.test
YAML
sed -i "s|^  dns: 0.0.0.0:15053|  dns: 0.0.0.0:15053\n  control: $W/control.sock|" "$W/airlock.yaml"
cat >>"$W/airlock.yaml" <<'YAML'
limits:
  session_grants: 600
  grants: 1000
YAML
world_start_airlock -c "$W/airlock.yaml"

api() {  # api METHOD PATH [BODY]: prints the body, then the status on its own line
  curl -sS --max-time 5 --unix-socket "$W/control.sock" -X "$1" \
    ${3:+-H 'Content-Type: application/json' -d "$3"} -w '\n%{http_code}\n' "http://airlock$2"
}
status_is() { [[ $(tail -1 <<<"$1") == "$2" ]]; }
grant() { "$AIRLOCK" grant --control "$W/control.sock" "$@"; }
export AIRLOCK W
export -f grant  # for the checks run with bash -c
resolves() { body_is 203.0.113.10 world_sbx dig +short +time=3 +tries=1 @"$GW_SBX_IP" "$1" A; }
fetch() { sbx_curl -o /dev/null -w '%{http_code}' "$@"; }
fetches() { [[ $(fetch "$@" 2>/dev/null) == 200 ]]; }
# refused_with WANT CMD...: CMD fails, and says WANT
refused_with() {
  local want=$1 out rc=0
  shift
  out=$("$@" 2>&1) || rc=$?
  echo "exit $rc: $out"
  [[ $rc != 0 && $out == *"$want"* ]]
}
# ended_badly PID: the background curl PID failed (its connection was cut)
ended_badly() {
  local rc=0
  wait "$1" || rc=$?
  echo "curl exit $rc"
  [[ $rc != 0 && $rc != 127 ]]
}
context() { api PUT /v1/sessions/task-1/context "{\"tool_call\":$1}" >/dev/null; }

out=$(api POST /v1/sessions '{"id":"task-1","sources":["198.51.100.2/32"],"policy":"sandbox"}')
expect "session task-1 registers (201)" status_is "$out" 201

# --- nothing granted yet -----------------------------------------------------------------
expect_not "granted.airlock.test does not resolve before its grant" resolves granted.airlock.test
expect_not "  nor is it reached by address" fetches --resolve granted.airlock.test:443:203.0.113.10 \
  https://granted.airlock.test/
expect "--tool-call without a current tool call is refused, and says what to do" \
  refused_with 'has no current tool call: set one first' grant --tool-call task-1 granted.airlock.test
expect "a grant with no scope is a usage error (exit 2)" \
  bash -c "'$AIRLOCK' grant --control '$W/control.sock' task-1 granted.airlock.test; test \$? = 2"
expect "an address is refused, said why" refused_with 'is an address' grant --for 1m task-1 203.0.113.66
expect "grant --help says what a grant never does" bash -c "'$AIRLOCK' grant --help | grep -q 'never overrides a'"

# --- a tool call's grant: exactly its host and ports, for that tool call ------------------
context '"call-1"'
expect "a grant for the tool call is given" \
  bash -c "grant --tool-call --by harness task-1 granted.airlock.test | tee /dev/stderr | grep -q '^granted g1 granted.airlock.test until tool call call-1 ends'" 2>&1
expect "  its add line says its scope and who asked" \
  line event=grant session=task-1 action=add name=granted.airlock.test rule=grant:g1 tool_call=call-1 \
  'notes~=until_tool_call_ends' 'notes~=by:harness'
expect "  the name resolves now" resolves granted.airlock.test
expect "  HTTPS to it is fetched" fetches https://granted.airlock.test/
expect "  its connect line: grant_allowed, rule grant:g1, tool call call-1" \
  line event=connect name=granted.airlock.test verdict=allow reason=grant_allowed rule=grant:g1 tool_call=call-1
expect "  plain HTTP on 80 too (no port: 80 and 443)" fetches http://granted.airlock.test/
expect_not "  not port 8443" fetches --connect-timeout 3 --resolve granted.airlock.test:8443:203.0.113.10 \
  https://granted.airlock.test:8443/
expect "    (denied: no rule and no grant for that port)" \
  line event=connect name=granted.airlock.test dst=203.0.113.10:8443 verdict=deny reason=host_not_allowed
expect_not "  not a subdomain" resolves sub.granted.airlock.test
expect_not "  not another host on the same address" fetches --resolve other.airlock.test:443:203.0.113.10 \
  https://other.airlock.test/
expect "  the policy's own rules stand: ok.airlock.test by its rule" fetches https://ok.airlock.test/
expect "  the grant is listed, with the connections it let through" \
  bash -c "grant --list task-1 | grep -E '^g1 granted.airlock.test until tool call call-1 ends; 2 connections so far'"

# A deny rule and a private address are out of any grant's reach.
grant --tool-call task-1 blocked.airlock.test >/dev/null
grant --tool-call task-1 inner.airlock.test >/dev/null
expect_not "a grant does not override a deny rule" fetches --resolve blocked.airlock.test:443:203.0.113.10 \
  https://blocked.airlock.test/
expect "  (host_denied, by the rule)" line event=connect name=blocked.airlock.test verdict=deny reason=host_denied
world_sbx dig +short +time=3 +tries=1 @"$GW_SBX_IP" inner.airlock.test A >"$W/inner.out" || true
expect "a granted name that resolves to a private address gets no address" test ! -s "$W/inner.out"
expect "  (private_address)" line event=dns name=inner.airlock.test verdict=deny reason=private_address

# A long download under the grant, then the tool call ends: the grant ends, the download is cut.
sbx_curl --max-time 60 --limit-rate 100k -o /dev/null https://granted.airlock.test/big.bin 2>"$W/cut-curl.err" &
download=$!
sleep 1.5
context '"call-2"'
expect "when the tool call ends, the download it opened is cut (curl fails)" ended_badly $download
expect "  its close line: deny, grant_ended, rule grant:g1, cut_open_connection" \
  line event=close name=granted.airlock.test verdict=deny reason=grant_ended rule=grant:g1 'notes~=cut_open_connection'
expect "  the grant's end line: tool_call_ended, 3 connections, 1 cut, stamped call-1" \
  line event=grant action=end rule=grant:g1 tool_call=call-1 'notes~=ended:tool_call_ended' 'notes~=connections:3' \
  'notes~=cut:1'
expect_not "  and the next fetch is denied" fetches --resolve granted.airlock.test:443:203.0.113.10 \
  https://granted.airlock.test/
expect "  host_not_allowed again" \
  line event=connect name=granted.airlock.test verdict=deny reason=host_not_allowed tool_call=call-2
expect "  nothing of call-1 is left" bash -c "grant --list task-1 | grep -q 'holds no grants'"

# --- a grant for a time expires on its own ------------------------------------------------
grant --for 3s task-1 granted.airlock.test >/dev/null
expect "a 3 s grant allows at once" fetches https://granted.airlock.test/
sleep 4.2
expect "  and has ended on its own by 4 s (its end line: expired)" \
  line --wait 0.5 event=grant action=end name=granted.airlock.test 'notes~=ended:expired'
expect_not "  then the host is denied" fetches --resolve granted.airlock.test:443:203.0.113.10 \
  https://granted.airlock.test/

# --- a grant for N connections ------------------------------------------------------------
grant --connections 2 --json task-1 granted.airlock.test >"$W/n.json"
expect "--json prints the grant as the daemon answered" \
  python3 -c 'import json,sys; g=json.load(open(sys.argv[1])); sys.exit(0 if g["connections_left"] == 2 else 1)' "$W/n.json"
expect "a 2-connection grant: the first fetch" fetches --resolve granted.airlock.test:443:203.0.113.10 https://granted.airlock.test/
expect "  the second" fetches --resolve granted.airlock.test:443:203.0.113.10 https://granted.airlock.test/
expect_not "  not the third" fetches --resolve granted.airlock.test:443:203.0.113.10 https://granted.airlock.test/
expect "  its end line: used_up, nothing cut" \
  bash -c "python3 '$here/lib/decisions.py' '$W/decisions.jsonl' event=grant action=end 'notes~=ended:used_up' 'notes~=connections:2' | grep -v 'cut:'"

# --- revoke, with an open connection ------------------------------------------------------
gid=$(grant --for 10m --json task-1 granted.airlock.test | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
sbx_curl --max-time 60 --limit-rate 100k -o /dev/null https://granted.airlock.test/big.bin 2>/dev/null &
download=$!
sleep 1.5
expect "revoking $gid says one open connection was cut" bash -c "grant --revoke $gid task-1 | grep -q '^revoked $gid: 1 open connections cut'"
expect "  the download fails" ended_badly $download
expect "  its close line names the grant" line event=close verdict=deny reason=grant_ended rule=grant:$gid
expect "revoking it again is refused (404, said why)" refused_with "holds no grant '$gid'" grant --revoke "$gid" task-1

# --- --no-cut: an ended grant leaves its connections alone --------------------------------
gid=$(grant --for 10m --no-cut --json task-1 granted.airlock.test | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
sbx_curl --max-time 60 --limit-rate 2000k -o "$W/nocut.bin" https://granted.airlock.test/big.bin 2>/dev/null &
download=$!
sleep 0.5
grant --revoke "$gid" task-1 >/dev/null
rc=0
wait "$download" || rc=$?
expect "a --no-cut grant's download finishes after its revoke (curl exit $rc), whole" cmp "$W/nocut.bin" "$W/big.bin"

# --- family and wildcard ------------------------------------------------------------------
grant --for 1m task-1 '*.granted.airlock.test' >/dev/null
expect "a wildcard grant covers the subdomain" resolves sub.granted.airlock.test
expect_not "  not the apex" resolves granted.airlock.test
expect "an unknown family is refused by name" refused_with 'no-such-family' grant --for 1m task-1 family:no-such-family

# --- the harness example of docs/agent-harness.md, as a harness runs it ---------------------
rc=0
python3 "$here/../../docs/examples/harness.py" --control "$W/control.sock" --session task-1 --tool-call call-h \
  --grant granted.airlock.test -- ip netns exec "$SBX" sh -c "curl -sS --max-time 10 --cacert '$W/ca.crt' -o /dev/null \
  https://granted.airlock.test/ && curl -sS --max-time 10 --cacert '$W/ca.crt' -o /dev/null \
  --resolve other.airlock.test:443:203.0.113.10 https://other.airlock.test/" >"$W/harness.out" 2>"$W/harness.err" || rc=$?
cat "$W/harness.out" "$W/harness.err"
expect "docs/examples/harness.py: its grant let the tool call fetch the granted host" \
  line event=connect name=granted.airlock.test verdict=allow reason=grant_allowed tool_call=call-h
expect "  it told the model of the denial in one line, with the reason" \
  grep -q '^airlock: a connection to other.airlock.test (203.0.113.10:443) was blocked: host_not_allowed: ' "$W/harness.out"
expect "  it exited with the command's status (curl's 35, not 0: $rc)" test "$rc" = 35
expect "  and ended the tool call, which ended its grant" \
  line event=grant action=end name=granted.airlock.test tool_call=call-h 'notes~=ended:tool_call_ended'

# --- bounds: 1,000 grants, per session and in all -----------------------------------------
out=$(api POST /v1/sessions '{"id":"task-2","sources":["198.51.100.3/32"],"policy":"sandbox"}')
expect "a second session registers" status_is "$out" 201
rss_before=$(awk '/VmRSS/ {print $2}' "/proc/$AIRLOCK_PID/status")
python3 - "$W/control.sock" >"$W/bounds.out" <<'PY'
import http.client, json, socket, sys

class Unix(http.client.HTTPConnection):
    def __init__(self, path):
        super().__init__("airlock", timeout=5)
        self.path = path
    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.settimeout(5)
        self.sock.connect(self.path)

def post(session, i):
    c = Unix(sys.argv[1])
    c.request("POST", f"/v1/sessions/{session}/grants",
              json.dumps({"allow": f"h{i}.bulk.test", "for": "10m"}), {"Content-Type": "application/json"})
    r = c.getresponse()
    body = json.loads(r.read())
    c.close()
    return r.status, body

counts = {}
for session, n in (("task-1", 700), ("task-2", 600)):
    for i in range(n):
        status, body = post(session, i)
        counts.setdefault((session, status), 0)
        counts[(session, status)] += 1
        if status == 429:
            counts.setdefault((session, "why"), body["error"][:100])
for k, v in sorted(counts.items(), key=str):
    print(k, v)
PY
cat "$W/bounds.out"
live1=$(api GET /v1/sessions/task-1/grants | head -1 | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["grants"]))')
expect "task-1 holds at most limits.session_grants (600) live grants ($live1)" test "$live1" = 600
expect "  the 100 beyond were refused (429), naming the session's cap" \
  bash -c "grep -q \"('task-1', 429) 10[0-9]\" '$W/bounds.out' && grep -q \"('task-1', 'why') .*limits.session_grants\" '$W/bounds.out'"
expect "task-2 got what the daemon-wide cap (1,000) left, the rest refused naming limits.grants" \
  bash -c "grep -q \"('task-2', 'why') .*limits.grants\" '$W/bounds.out'"
expect "a connection is decided as before with 1,000 grants live" fetches https://ok.airlock.test/
rss=$(awk '/VmRSS/ {print $2}' "/proc/$AIRLOCK_PID/status")
# (An ASan build: its quarantine keeps what the 1,300 calls freed, so the bound is loose;
# grants without their caps would be 1,300 more.)
expect "  and the daemon grew by $((rss - rss_before)) KiB for them (< 65,536)" test $((rss - rss_before)) -lt 65536

# --- the session's end ends its grants -----------------------------------------------------
sbx_curl --max-time 60 --limit-rate 100k -o /dev/null --resolve sub.granted.airlock.test:443:203.0.113.10 \
  https://sub.granted.airlock.test/big.bin 2>/dev/null &
download=$!
sleep 1.5
out=$(api DELETE /v1/sessions/task-1)
expect "removing task-1 (200)" status_is "$out" 200
expect "  cut the connection its grant let through" ended_badly $download
expect "  every grant ended with it (session_closed), before its close line" \
  python3 -c '
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
ends = [i for i, l in enumerate(lines) if l["event"] == "grant" and l["session"] == "task-1" and l["action"] == "end"
        and "ended:session_closed" in l.get("notes", [])]
close = [i for i, l in enumerate(lines) if l["event"] == "session" and l["session"] == "task-1" and l["action"] == "close"]
print(len(ends), "ended with the session; close at", close)
sys.exit(0 if len(ends) >= 600 and close and max(ends) < close[0] else 1)' "$W/decisions.jsonl"
expect "the explain story shows the grants" bash -c "'$AIRLOCK' explain --log '$W/decisions.jsonl' task-1 | grep -q 'grant add granted.airlock.test (grant:g1)'"
check_summary
