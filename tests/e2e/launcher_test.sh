#!/usr/bin/env bash
# `airlock run`, `airlock gc`, `airlock attach`/`detach` end to end. The world's gateway
# namespace plays the host: the daemon runs there with a control socket in the test's
# directory, and every `airlock run` starts there too (through nsenter, which keeps
# /sys/fs/cgroup visible; `ip netns exec` remounts /sys). Sandboxes get addresses from
# 198.18.0.0/15 inside that namespace only. Checked: allowed and denied traffic, what the
# filesystem and environment hide, limits, exit statuses, signals, isolation between two
# sandboxes and from the gateway, the embedded daemon, the inspection CA offered to CMD
# (with a second daemon whose config inspects), HTTPS on a proxy port of its own (the
# first daemon and the embedded one have two; the second daemon has one, and keeps the
# single-port table), and that nothing (namespace, veth, nft table, cgroup, record) is left
# after runs, kills, a killed airlock (then gc) and 100 runs in a row. Its records are kept
# in its own --state-dir.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)

WORLD_RECORDS="allowed.airlock.test 203.0.113.10
only-a.airlock.test 203.0.113.10
denied.airlock.test 203.0.113.66"
WORLD_CERT_NAMES="allowed.airlock.test only-a.airlock.test denied.airlock.test"
source "$here/lib/world.sh"
source "$here/lib/check.sh"
for tool in bwrap nsenter; do
  command -v "$tool" >/dev/null || { echo "missing $tool: run deploy/install-deps.sh"; exit 77; }
done
world_up

# The daemon: the world's policy for the world's sandbox, plus "closed" (nothing allowed)
# for launched sandboxes, whose sessions add their own --allow. Two proxy ports: the
# launcher sends a sandbox's TCP to :443 to the second (the world's own table, from
# world_up, still sends everything to the first).
cat >"$W/airlock.yaml" <<YAML
version: 1
listen:
  proxy: [0.0.0.0:15001, 0.0.0.0:15443]
  dns: 0.0.0.0:15053
  control: $W/control.sock
upstream_dns: [$DNS_IP]
log:
  decisions: $W/decisions.jsonl
policies:
  sandbox:
    allow:
      - host: allowed.airlock.test
  closed:
    allow:
      - host: nothing.airlock.test
sessions:
  - id: world-sandbox
    source: 198.51.100.0/24
    policy: sandbox
default_policy: closed
YAML
world_start_airlock -c "$W/airlock.yaml"
for _ in $(seq 100); do [[ -S $W/control.sock ]] && break; sleep 0.05; done

# A service on the gateway that no sandbox may reach (stands for ssh, admin, metrics).
ip netns exec "$GW" timeout 170 python3 -c '
import socket
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", 9901)); s.listen(16)
while True:
    c, _ = s.accept(); c.sendall(b"gateway-secret\n"); c.close()
' &
WORLD_PIDS+=($!)
world_wait_listen "$GW" t 9901
# A UDP echo in the "internet", for the check that UDP other than DNS goes nowhere.
ip netns exec "$NET" timeout 170 python3 -c '
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("203.0.113.10", 7777))
while True:
    d, a = s.recvfrom(64); s.sendto(d, a)
' &
WORLD_PIDS+=($!)
world_wait_listen "$NET" u 7777

# A project directory to work in, a home full of secrets, and host sockets of the kinds
# a sandbox must not see.
mkdir -p "$W/proj" "$W/home/.ssh"
echo "PRIVATE KEY" >"$W/home/.ssh/id_ed25519"
echo "original" >"$W/proj/file.txt"
HOST_SOCK=/run/airlock-e2e-$P.sock
python3 -c 'import socket,sys,time; s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.listen(1); time.sleep(170)' "$HOST_SOCK" &
WORLD_PIDS+=($!)
# A check that stops the script half-way must not leave its background `airlock run`s
# behind: they are found by this test's own state directory on their command line.
trap 'pkill -TERM -f -- "run --state-dir $ST " || true; rm -f "$HOST_SOCK"; world_down' EXIT
cd "$W/proj"

# The test's own sandbox records: its gc sees only what its runs left, whatever else the
# machine has under /run/airlock/sandboxes.
ST="$W/state"
# airlock run in the gateway namespace, against the daemon, with the test CA readable;
# exported, so `bash -c '...'` checks can use it too.
run() { nsenter --net="/run/netns/$GW" env HOME="$W/home" "$AIRLOCK" run --state-dir "$ST" --control "$W/control.sock" --ro "$W/ca.crt" "$@"; }
export -f run
export W GW AIRLOCK ST
in_curl=(curl -sS --max-time 10 --cacert "$W/ca.crt")
session_of() { sed -n 's/^airlock: session \([^ ]*\) started.*/\1/p' "$1" | head -1; }
# The pid of the airlock process running CMD (a background `run` is a subshell around it).
airlock_pid() { pgrep -f -- "run --state-dir $ST --control $W/control.sock .*$1" | head -1; }
# Waits (bounded) until a process matching `pgrep -f PATTERN` exists.
wait_for_process() { for _ in $(seq 100); do pgrep -f -- "$1" >/dev/null && return 0; sleep 0.05; done; world_log "no process $1"; }

# HTTPS on a port of its own: `hold_and_look RUN...` runs `RUN... -- python3 hold.py` in the
# background, whose CMD opens a connection to the origin's :443 and one to its :80 and holds
# both until told. Meanwhile it saves the run's nft table in $W/hold.nft and, in
# $W/hold.ports, the gateway ports the two connections arrived at ("P443 P80", read from
# their four-tuples on the gateway).
cat >"$W/proj/hold.py" <<'PY'
import os, socket, time
held = [socket.create_connection(("203.0.113.10", port), timeout=5) for port in (443, 80)]
with open("held.tmp", "w") as f:
    f.write(" ".join(str(s.getsockname()[1]) for s in held) + "\n")
os.rename("held.tmp", "held.txt")
for _ in range(200):
    if os.path.exists("release"):
        break
    time.sleep(0.05)
PY
# The gateway's port of the connection from ADDRESS:PORT (any state but listening).
gw_port_of() {
  ip netns exec "$GW" ss -Htan | awk -v peer="$1:$2" '$5 == peer { n = split($4, a, ":"); print a[n]; exit }'
}
hold_and_look() {
  local apid ip table c443="" c80=""
  rm -f "$W/proj/held.txt" "$W/proj/release" "$W/hold.nft" "$W/hold.ports"
  "$@" -- python3 hold.py 2>"$W/hold.err" &
  apid=$!
  for _ in $(seq 200); do [[ -s $W/proj/held.txt ]] && break; sleep 0.05; done
  ip=$(sed -n 's/.*started (sandbox \([0-9.]*\),.*/\1/p' "$W/hold.err")
  table=$(ip netns exec "$GW" nft list tables | sed -n 's/^table inet \(airlock_[0-9a-f]\{8\}\)$/\1/p' | head -1)
  ip netns exec "$GW" nft list table inet "$table" >"$W/hold.nft" 2>&1 || true
  read -r c443 c80 <"$W/proj/held.txt" || true
  echo "$(gw_port_of "$ip" "$c443") $(gw_port_of "$ip" "$c80")" >"$W/hold.ports"
  touch "$W/proj/release"
  wait "$apid" || true
  rm -f "$W/proj/held.txt" "$W/proj/release"
}

# What airlock leaves in the system, one number per kind.
leftovers() {
  local netns veth nft cg state
  netns=$(find /run/netns -maxdepth 1 -name 'airlock-*' | wc -l)
  veth=$(ip -n "$GW" -o link show | grep -c ': airlock[0-9a-f]\{8\}[@:]' || true)
  nft=$(ip netns exec "$GW" nft list tables | grep -c 'airlock_[0-9a-f]\{8\}$' || true)
  cg=$( (find /sys/fs/cgroup/*/airlock -mindepth 1 -maxdepth 1 -type d 2>/dev/null; find /sys/fs/cgroup -maxdepth 5 -type d -name 'airlock-*' 2>/dev/null) | wc -l)
  state=$(find "$ST" -name '*.state' 2>/dev/null | wc -l)
  echo "netns=$netns veth=$veth nft=$nft cgroup=$cg state=$state"
}
# The gateway end of a veth goes when the kernel finishes destroying the sandbox's
# namespace, in the background, moments after airlock exits: allow it 5 s.
back_to_baseline() {
  for _ in $(seq 50); do [[ $(leftovers) == "$baseline" ]] && return 0; sleep 0.1; done
  echo "left: $(leftovers), before: $baseline"
  return 1
}
baseline=$(leftovers)
world_log "before: $baseline"
# What this test's runs added to the baseline (namespace pins and cgroups are the machine's; others may exist),
# as "netns=+1 veth=+1 ...", matched against a pattern; prints both when it does not match.
grown_like() {
  local now pattern=$1 diff="" k v b
  now=$(leftovers)
  for kv in $now; do
    k=${kv%%=*} v=${kv#*=}
    b=$(tr ' ' '\n' <<<"$baseline" | sed -n "s/^$k=//p")
    diff+="$k=+$((v - b)) "
  done
  diff=${diff% }
  [[ $diff =~ $pattern ]] && return 0
  echo "grown: $diff (now: $now, before: $baseline)"
  return 1
}

# 1. Traffic: an allowed name works, a denied one does not, and both are in the session.
expect "allowed https works inside airlock run" body_is "origin says hello to only-a.airlock.test" \
  run --policy closed --allow only-a.airlock.test -- "${in_curl[@]}" https://only-a.airlock.test/
run --policy closed --allow only-a.airlock.test -- "${in_curl[@]}" https://denied.airlock.test/ >"$W/denied.out" 2>"$W/denied.err" && st=0 || st=$?
expect "a denied name fails inside airlock run (curl's exit status is airlock's)" test "$st" -eq 6
sid=$(session_of "$W/denied.err")
expect "  the session id is printed at the start, on stderr" test -n "$sid"
expect "  its DNS query was denied in that session" line event=dns session="$sid" name=denied.airlock.test verdict=deny
expect "  the summary names the counts and the hint" \
  grep -q "^airlock: session $sid ended after .*exit 6; .* DNS queries; details: airlock explain $sid\$" "$W/denied.err"
expect "  CMD's stdout carries nothing of airlock's" test ! -s "$W/denied.out"
expect_not "the default policy of the daemon gives nothing to a sandbox without --allow" \
  run --policy closed -- "${in_curl[@]}" https://allowed.airlock.test/
expect "an address (no name) is refused by the proxy" body_is 403 \
  run --policy closed -- curl -s --max-time 10 -o /dev/null -w '%{http_code}' http://203.0.113.66/
cat >"$W/proj/udp_probe.py" <<'PY'
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(2)
s.sendto(b"ping", ("203.0.113.10", 7777))
print(s.recvfrom(16)[0].decode())
PY
expect "  (a UDP echo in the world answers the gateway)" body_is ping ip netns exec "$GW" python3 "$W/proj/udp_probe.py"
expect_not "UDP other than DNS does not leave a sandbox" run -- python3 udp_probe.py

# 1b. :443 on the daemon's second proxy port: the run's table sends it there and only it,
#     the connections arrive where the table says, and HTTPS (above) is judged as before.
hold_and_look run
expect "the run's table sends TCP to :443 to the daemon's second proxy port" \
  grep -q 'tcp dport 443 redirect to :15443$' "$W/hold.nft"
expect "  every other TCP connection to the first" grep -q 'meta l4proto tcp redirect to :15001$' "$W/hold.nft"
expect "  and admits both" grep -q 'ct status dnat tcp dport { 15001, 15443 } accept$' "$W/hold.nft"
expect "  a connection to :443 arrives at 15443, one to :80 at 15001" body_is "15443 15001" cat "$W/hold.ports"
run --policy closed --allow only-a.airlock.test -- "${in_curl[@]}" --resolve denied.airlock.test:443:203.0.113.66 \
  https://denied.airlock.test/ 2>"$W/denied443.err" && st=0 || st=$?
expect "https to a denied name at a forced address is still denied" test "$st" -ne 0
expect "  by the proxy, in the run's session" line event=connect proto=tls name=denied.airlock.test verdict=deny \
  reason=host_not_allowed dst=203.0.113.66:443 session="$(session_of "$W/denied443.err")"

# 2. The gateway itself: its other ports, its control socket, its loopback.
cat >"$W/proj/gw_probe.sh" <<'SH'
gw=$(awk '/^nameserver/{print $2}' /etc/resolv.conf)
curl -s --max-time 10 -o /dev/null -w '%{http_code}' "http://$gw:$1/"
SH
expect "the gateway's other TCP ports are not reachable: the proxy answers 403 instead" body_is 403 run -- sh gw_probe.sh 9901
expect "  the attempt was judged by the proxy, not served" line event=connect dst~=:9901 verdict=deny
expect "the control socket is not in the sandbox" run -- test ! -e "$W/control.sock"
expect "IPv6 is disabled in the sandbox" body_is 1 run -- cat /proc/sys/net/ipv6/conf/all/disable_ipv6
expect "the workload has no capabilities (no CAP_NET_ADMIN)" \
  run -- sh -c 'grep -q "^CapEff:[[:space:]]*0000000000000000$" /proc/self/status && ! ip link set eth0 down 2>/dev/null'
expect "resolv.conf points at the gateway" run -- grep -q '^nameserver 198\.1[89]\.' /etc/resolv.conf
expect "only stdin, stdout and stderr are inherited (no daemon or control sockets)" \
  body_is "0 1 2 3" run -- sh -c 'ls /proc/self/fd | sort -n | tr "\n" " " | sed "s/ $//"'

# 3. Filesystem and environment.
expect "the home directory is empty: ~/.ssh is not there" body_is "end" run -- sh -c 'ls -A "$HOME"; echo end'
expect "host sockets in /run are not there" run -- test ! -e "$HOST_SOCK"
expect_not "root's secrets in /etc are covered (the workload runs as root here)" run -- grep -q root /etc/shadow
expect "  while the rest of /etc is there" run -- grep -q '^root:' /etc/passwd
expect "/run, /var/tmp and /tmp are empty tmpfs (but for what is bound there: the test CA)" \
  body_is "$(basename "$W") end" run --no-cwd -- sh -c 'ls -A /run; ls -A /var/tmp; echo $(ls -A /tmp) end'
expect "secrets in the parent's environment are not passed" body_is "end" \
  env AWS_SECRET_ACCESS_KEY=s1 GITHUB_TOKEN=s2 NPM_TOKEN=s3 SSH_AUTH_SOCK="$HOST_SOCK" GOOGLE_X=s4 AZURE_Y=s5 \
  bash -c "run -- sh -c 'env | grep -E \"^(AWS_|GITHUB_TOKEN|NPM_TOKEN|SSH_AUTH_SOCK|GOOGLE_|AZURE_)\"; echo end'"
expect "  unless named with --env" body_is "GITHUB_TOKEN=s2" \
  env GITHUB_TOKEN=s2 NPM_TOKEN=s3 bash -c "run --env GITHUB_TOKEN -- env | grep -E '^(GITHUB|NPM)_TOKEN='"
expect "the working directory is read-write by default" run -- sh -c 'echo changed >file.txt'
expect "  and the change is there afterwards" body_is changed cat "$W/proj/file.txt"
echo original >"$W/proj/file.txt"
expect_not "--ro-cwd: the working directory is read-only" run --ro-cwd -- sh -c 'echo changed >file.txt'
expect "--copy-cwd: the copy can be written" body_is changed run --copy-cwd -- sh -c 'echo changed >file.txt; cat file.txt'
expect "  and the original is untouched" body_is original cat "$W/proj/file.txt"
expect "  and the copy is gone" test -z "$(find /var/tmp -maxdepth 1 -name 'airlock-copy-*')"
expect "/tmp written in one run is gone in the next" bash -c "run -- sh -c 'echo x >/tmp/left' && run -- test ! -e /tmp/left"
(cd "$W/home" && nsenter --net="/run/netns/$GW" env HOME="$W/home" "$AIRLOCK" run --state-dir "$ST" --control "$W/control.sock" -- true) \
  2>"$W/refuse.err" && st=0 || st=$?
expect "running from \$HOME is refused (it would share ~/.ssh), with status 125" test "$st" -eq 125
expect "  and says what to do" grep -q 'is your home directory or contains it.*--no-cwd; CMD was not started' "$W/refuse.err"

# 4. Exit statuses, limits, timeout, signals.
expect "CMD's exit status is airlock's" bash -c "run -- sh -c 'exit 7'; test \$? -eq 7"
expect "a CMD killed by a signal gives 128+N" bash -c "run -- sh -c 'kill -TERM \$\$'; test \$? -eq 143"
expect "a missing CMD gives 127, and nothing is set up" bash -c "run -- no-such-command-here; test \$? -eq 127"
run --memory 64M -- python3 -c 'a = bytearray(512 * 1024 * 1024); print("got it")' >"$W/mem.out" 2>"$W/mem.err" && st=0 || st=$?
expect "--memory: a process past the limit is killed (137)" test "$st" -eq 137
expect "  and the summary says which limit" grep -q 'stopped by the memory limit (64 MiB), exit 137' "$W/mem.err"
run --pids 16 -- python3 -c '
import os, time
for i in range(64):
    if os.fork() == 0:
        time.sleep(3); os._exit(0)
' >"$W/pids.out" 2>"$W/pids.err" && st=0 || st=$?
expect "--pids: forking past the limit fails" test "$st" -ne 0
expect "  and the summary says which limit" grep -q 'stopped by the pids limit (16)' "$W/pids.err"
start=$(date +%s)
run --timeout 1s -- sleep 30 2>"$W/timeout.err" && st=0 || st=$?
took=$(( $(date +%s) - start ))
expect "--timeout: CMD is stopped, status 124" test "$st" -eq 124
expect "  within the timeout plus the grace period" test "$took" -le 6
expect "  and the summary says so" grep -q 'timed out (--timeout 1s), exit 124' "$W/timeout.err"
expect "--timeout kills the whole tree, also what ignores SIGTERM" \
  bash -c "run --timeout 1s -- sh -c 'trap \"\" TERM; sleep 3010 & wait'; test \$? -eq 124 && ! pgrep -f '^sleep 3010\$'"
expect "--cpus is installed" run --cpus 0.5 -- true

# SIGTERM to airlock is passed on to CMD, which may clean up; airlock exits with its status.
run -- sh -c 'trap "echo got-term; exit 42" TERM; sleep 3011 & wait' >"$W/term.out" 2>"$W/term.err" &
apid=$!
wait_for_process '^sleep 3011$'
kill -TERM "$(airlock_pid 'sleep 3011')"
wait "$apid" && st=0 || st=$?
expect "SIGTERM is forwarded to CMD, and CMD's status returned" test "$st" -eq 42
expect "  CMD saw it" grep -q got-term "$W/term.out"
expect "a reader of airlock's output that goes away does not stop the teardown" \
  bash -c "run -- seq 1 100000 2>&1 | head -1 >/dev/null"
expect "  (CMD still dies of SIGPIPE as usual)" body_is "141 0" run -- bash -c 'yes | head -1 >/dev/null; echo "${PIPESTATUS[*]}"'
expect "nothing is left after those runs" back_to_baseline

# 5. kill -9 of CMD: airlock notices, reports 137, removes everything.
run -- sleep 3001 2>"$W/k9.err" &
apid=$!
wait_for_process '^sleep 3001$'
expect "while it runs, its pieces exist" grown_like '^netns=\+1 veth=\+[1-9] nft=\+1 cgroup=\+0 state=\+1$'
kill -9 "$(pgrep -f '^sleep 3001$')"
wait "$apid" && st=0 || st=$?
expect "kill -9 of CMD: airlock exits 137" test "$st" -eq 137
expect "  and nothing is left (netns, veth, nft table, cgroup, record)" back_to_baseline
run --memory 128M --pids 64 -- sleep 3002 2>"$W/k9b.err" &
apid=$!
wait_for_process '^sleep 3002$'
kill -9 "$(pgrep -f '^sleep 3002$')"
wait "$apid" || true
expect "  also with cgroups (limits)" back_to_baseline

# 6. kill -9 of airlock itself: the workload dies with it; gc removes the rest.
run --memory 128M -- sleep 3003 2>"$W/crash.err" &
apid=$!
wait_for_process '^sleep 3003$'
crash_sid=$(session_of "$W/crash.err")
kill -9 "$(airlock_pid 'sleep 3003')"
wait "$apid" || true
for _ in $(seq 50); do pgrep -f '^sleep 3003$' >/dev/null || break; sleep 0.1; done
expect "kill -9 of airlock: CMD dies with it" bash -c "! pgrep -f '^sleep 3003\$'"
expect "  leftovers remain" grown_like '^netns=\+1 veth=\+[1-9] nft=\+1 cgroup=\+[1-9][0-9]* state=\+1$'
expect "airlock gc --dry-run lists it" bash -c "$AIRLOCK gc --state-dir $ST --dry-run | grep -q 'would remove'"
expect "airlock gc removes them (from the root namespace)" bash -c "$AIRLOCK gc --state-dir $ST | tee /dev/stderr | grep -q 'removed .*nft table.*veth'"
expect "  nothing is left" back_to_baseline
expect "  and the session was ended in the daemon" line event=session session="$crash_sid" action=close
expect "a second gc has nothing to do" bash -c "$AIRLOCK gc --state-dir $ST | grep -q 'nothing to remove'"

# 7. Two sandboxes at once: A serves HTTP on its address and may reach only-a; B may
#    reach neither.
cat >"$W/proj/a.sh" <<SH
python3 -m http.server 8080 2>a.log >/dev/null &
# A's own request, one log line: tried until the server listens (a loaded machine, a
# sanitizer build: half a second was not always enough); a refused try logs nothing.
for i in \$(seq 50); do curl -s -o /dev/null --max-time 2 http://127.0.0.1:8080/ && break; sleep 0.1; done
curl -sS --max-time 10 --cacert $W/ca.crt https://only-a.airlock.test/ >a.out
sleep 6
kill %1
SH
run --policy closed --allow only-a.airlock.test -- sh a.sh 2>"$W/a.err" &
apid=$!
for _ in $(seq 100); do grep -q started "$W/a.err" 2>/dev/null && break; sleep 0.05; done
a_ip=$(sed -n 's/.*started (sandbox \([0-9.]*\),.*/\1/p' "$W/a.err")
for _ in $(seq 100); do [[ -s $W/proj/a.out ]] && break; sleep 0.1; done  # A's fetch is done
expect "A reaches its allowed name" body_is "origin says hello to only-a.airlock.test" cat "$W/proj/a.out"
expect "B cannot reach A's address: the proxy answers instead, 403" body_is 403 \
  run --policy closed -- curl -s --max-time 5 -o /dev/null -w '%{http_code}' "http://$a_ip:8080/"
run --policy closed -- "${in_curl[@]}" https://only-a.airlock.test/ 2>"$W/b.err" && st=0 || st=$?
expect "A's allowance does not apply to B" test "$st" -ne 0
expect "  B's attempt is denied in B's session" line event=dns session="$(session_of "$W/b.err")" name=only-a.airlock.test verdict=deny
wait "$apid" || true
a_gets=$(grep -c 'GET /' "$W/proj/a.log" || true)
expect "  A's server saw only A's own request (requests it logged: $a_gets)" test "$a_gets" -eq 1
rm -f "$W/proj/a.out" "$W/proj/a.log"

# Concurrent starts: the address allocation is taken under a lock, so six at once get six
# blocks and all succeed.
pids=()
for i in $(seq 6); do
  run -- sleep 1 2>"$W/par$i.err" &
  pids+=($!)
done
par_ok=0
for p in "${pids[@]}"; do wait "$p" && par_ok=$((par_ok + 1)); done
expect "six sandboxes started at once all run" test "$par_ok" -eq 6
expect "  each with its own address" test "$(cat "$W"/par*.err | sed -n 's/.*started (sandbox \([0-9.]*\),.*/\1/p' | sort -u | wc -l)" -eq 6

# SIGINT (a terminal's Ctrl-C reaches airlock, CMD has its own session) is forwarded too.
# (A background job of a script starts with SIGINT ignored, which airlock respects, as
# every program does: python puts the default back first.)
python3 -c 'import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.execvp("bash", ["bash", "-c", "run \"$@\"", "run"] + sys.argv[1:])' \
  -- sh -c 'trap "exit 5" INT; sleep 3012 & wait' 2>"$W/int.err" &
apid=$!
wait_for_process '^sleep 3012$'
kill -INT "$(airlock_pid 'sleep 3012')"
wait "$apid" && st=0 || st=$?
expect "SIGINT is forwarded to CMD" test "$st" -eq 5

# 8. The zero-config path: no daemon on --control, so an embedded one serves this sandbox.
cat >"$W/embedded.yaml" <<YAML
version: 1
upstream_dns: [$DNS_IP]
log:
  decisions: $W/embedded.jsonl
policies:
  only:
    allow:
      - host: allowed.airlock.test
default_policy: only
YAML
nsenter --net="/run/netns/$GW" env HOME="$W/home" "$AIRLOCK" run --state-dir "$ST" --control "$W/none.sock" -c "$W/embedded.yaml" \
  --ro "$W/ca.crt" -- "${in_curl[@]}" https://allowed.airlock.test/ >"$W/emb.out" 2>"$W/emb.err" && st=0 || st=$?
expect "embedded daemon: allowed https works" test "$st" -eq 0
expect "  the body is the origin's" grep -q "origin says hello to allowed.airlock.test" "$W/emb.out"
expect "  airlock said it started one" grep -q 'starting an embedded daemon for this sandbox' "$W/emb.err"
expect "  its decisions are in its own log" grep -q '"name":"allowed.airlock.test"' "$W/embedded.jsonl"
expect_not "embedded daemon: a denied name fails" \
  nsenter --net="/run/netns/$GW" env HOME="$W/home" "$AIRLOCK" run --state-dir "$ST" --control "$W/none.sock" -c "$W/embedded.yaml" \
  --ro "$W/ca.crt" -- "${in_curl[@]}" https://denied.airlock.test/
hold_and_look nsenter --net="/run/netns/$GW" env HOME="$W/home" "$AIRLOCK" run --state-dir "$ST" \
  --control "$W/none.sock" -c "$W/embedded.yaml"
read -r emb443 emb80 <"$W/hold.ports" || true
expect "  the embedded daemon has two proxy ports: :443 arrives at the second, :80 at the first" \
  test -n "$emb443" -a -n "$emb80" -a "$emb443" != "$emb80"
expect "  the run's table says so" \
  bash -c "grep -q 'tcp dport 443 redirect to :$emb443\$' '$W/hold.nft' && grep -q 'meta l4proto tcp redirect to :$emb80\$' '$W/hold.nft'"
expect "nothing is left after the embedded runs" back_to_baseline

# 9. The inspection CA: a daemon whose config inspects some rule names its CA (GET
#    /v1/info), and `airlock run` offers it to CMD: a read-only bundle of the system roots
#    plus airlock's CA behind SSL_CERT_FILE and its kin, the CA alone for Node. A second
#    daemon in the gateway namespace (other ports, its own control socket) has such a config.
"$AIRLOCK" ca init "$W/inspect-ca" >/dev/null 2>"$W/ca-init.err"
cat >"$W/inspect.yaml" <<YAML
version: 1
listen:
  proxy: 0.0.0.0:16001
  dns: 0.0.0.0:16053
  control: $W/inspect.sock
upstream_dns: [$DNS_IP]
log:
  decisions: $W/inspect.jsonl
inspection:
  ca_dir: $W/inspect-ca
policies:
  inspected:
    allow:
      - host: allowed.airlock.test
        inspect: true
default_policy: inspected
YAML
ip netns exec "$GW" "$AIRLOCK" daemon -c "$W/inspect.yaml" 2>"$W/inspect-daemon.err" &
WORLD_PIDS+=($!)
for _ in $(seq 200); do grep -q 'airlock: ready' "$W/inspect-daemon.err" 2>/dev/null && break; sleep 0.05; done
expect "a daemon with an inspect rule and inspection.ca_dir is running" grep -q 'airlock: ready' "$W/inspect-daemon.err"
run_inspect() {
  nsenter --net="/run/netns/$GW" env HOME="$W/home" "$AIRLOCK" run --state-dir "$ST" --control "$W/inspect.sock" \
    --ro "$W/inspect-ca/ca.crt" "$@"
}
ca_vars='SSL_CERT_FILE|NODE_EXTRA_CA_CERTS|REQUESTS_CA_BUNDLE|GIT_SSL_CAINFO|CURL_CA_BUNDLE|npm_config_cafile'
expect "with inspection on, the CA variables are set for CMD" \
  body_is "CURL_CA_BUNDLE=/run/airlock/ca-bundle.crt
GIT_SSL_CAINFO=/run/airlock/ca-bundle.crt
NODE_EXTRA_CA_CERTS=/run/airlock/ca.crt
REQUESTS_CA_BUNDLE=/run/airlock/ca-bundle.crt
SSL_CERT_FILE=/run/airlock/ca-bundle.crt
npm_config_cafile=/run/airlock/ca-bundle.crt" \
  run_inspect -- sh -c "env | grep -E '^($ca_vars)=' | sort"
expect "  NODE_EXTRA_CA_CERTS is airlock's CA, byte for byte" \
  run_inspect -- sh -c "cmp \"\$NODE_EXTRA_CA_CERTS\" '$W/inspect-ca/ca.crt'"
expect "  SSL_CERT_FILE is readable and holds airlock's CA" \
  run_inspect -- python3 -c "import os, sys; sys.exit(open('$W/inspect-ca/ca.crt').read().strip() not in open(os.environ['SSL_CERT_FILE']).read())"
if [[ -f /etc/ssl/certs/ca-certificates.crt ]]; then
  expect "  and, before it, the system roots (so hosts that are not inspected still verify)" \
    run_inspect -- sh -c 'cmp -n "$(stat -c %s /etc/ssl/certs/ca-certificates.crt)" /etc/ssl/certs/ca-certificates.crt "$SSL_CERT_FILE"'
else
  skip "  and, before it, the system roots" "no /etc/ssl/certs/ca-certificates.crt here: package ca-certificates"
fi
expect_not "  the files are read-only" run_inspect -- sh -c 'echo x >>"$SSL_CERT_FILE"'
expect "  OpenSSL accepts the bundle (airlock's CA verifies against it)" \
  run_inspect -- sh -c "openssl verify -CAfile \"\$SSL_CERT_FILE\" '$W/inspect-ca/ca.crt' >/dev/null"
expect "  the CA's key is nowhere in the sandbox" \
  run_inspect -- sh -c "test ! -e '$W/inspect-ca/ca.key' && ! grep -rqs 'PRIVATE KEY' /run/airlock"
expect "  the embedded daemon with the same config offers it too" \
  body_is "/run/airlock/ca-bundle.crt" \
  nsenter --net="/run/netns/$GW" env HOME="$W/home" "$AIRLOCK" run --state-dir "$ST" --control "$W/none.sock" \
  -c "$W/inspect.yaml" -- sh -c 'test -r "$NODE_EXTRA_CA_CERTS" && echo "$SSL_CERT_FILE"'
expect "without inspection (the first daemon) none of them is set, and /run/airlock is not there" \
  body_is "end" run -- sh -c "env | grep -E '^($ca_vars)='; test -e /run/airlock && echo there; echo end"
expect "  nor with the embedded daemon without an inspect rule" body_is "end" \
  nsenter --net="/run/netns/$GW" env HOME="$W/home" "$AIRLOCK" run --state-dir "$ST" --control "$W/none.sock" \
  -c "$W/embedded.yaml" -- sh -c "env | grep -E '^($ca_vars)='; echo end"
expect "  even when the caller's environment has them" body_is "end" \
  env SSL_CERT_FILE=/tmp/mine.pem CURL_CA_BUNDLE=/tmp/mine.pem bash -c "run -- sh -c \"env | grep -E '^($ca_vars)='; echo end\""
hold_and_look run_inspect
expect "a daemon with one proxy port keeps the single-port table: no rule for :443" \
  bash -c "! grep -q 'dport 443' '$W/hold.nft' && grep -q 'meta l4proto tcp redirect to :16001\$' '$W/hold.nft'"
expect "  both connections arrive at its one port" body_is "16001 16001" cat "$W/hold.ports"
expect "  and HTTPS to a name it does not inspect works through it" \
  body_is "origin says hello to only-a.airlock.test" run_inspect --ro "$W/ca.crt" --allow only-a.airlock.test -- "${in_curl[@]}" https://only-a.airlock.test/
expect "nothing is left after the inspection runs" back_to_baseline

# 10. attach/detach: the world's sandbox namespace, made by the test like a container's.
expect "before attach, the world's sandbox uses the world's gateway route" \
  bash -c "ip -n $SBX route show default | grep -q 'via $GW_SBX_IP'"
expect "airlock attach puts it behind airlock" \
  nsenter --net="/run/netns/$GW" "$AIRLOCK" attach --state-dir "$ST" --netns "$SBX" --control "$W/control.sock" --policy closed \
  --allow only-a.airlock.test
expect "  its default route goes through airlock0" bash -c "ip -n $SBX route show default | grep -q 'dev airlock0'"
attach_table=$(ip netns exec "$GW" nft list tables | sed -n 's/^table inet \(airlock_[0-9a-f]\{8\}\)$/\1/p' | head -1)
ip netns exec "$GW" nft list table inet "$attach_table" >"$W/attach.nft" 2>&1 || true
expect "  its table sends :443 to the daemon's second proxy port, the rest to the first" \
  bash -c "grep -q 'tcp dport 443 redirect to :15443\$' '$W/attach.nft' && grep -q 'meta l4proto tcp redirect to :15001\$' '$W/attach.nft'"
expect "  its allowed name works (DNS through resolv.conf's server, redirected)" \
  body_is "origin says hello to only-a.airlock.test" sbx_curl https://only-a.airlock.test/
expect_not "  a name its policy does not allow fails" sbx_curl https://allowed.airlock.test/
expect_not "  the old veth is no way around" world_sbx curl -sS --max-time 5 --interface "$P-s0" http://203.0.113.10/
expect_not "attaching twice is refused" \
  nsenter --net="/run/netns/$GW" "$AIRLOCK" attach --state-dir "$ST" --netns "$SBX" --control "$W/control.sock"
expect "airlock detach undoes it" nsenter --net="/run/netns/$GW" "$AIRLOCK" detach --state-dir "$ST" --netns "$SBX"
expect "  the old default route is back" bash -c "ip -n $SBX route show default | grep -q 'via $GW_SBX_IP'"
expect "  no airlock0, no guard table" \
  bash -c "! ip -n $SBX link show airlock0 2>/dev/null && ! ip netns exec $SBX nft list tables | grep -q airlock_guard"
expect "  the world's path works again" body_is "origin says hello to allowed.airlock.test" sbx_curl https://allowed.airlock.test/
expect "nothing is left after detach" back_to_baseline
expect "attach with a daemon of one proxy port (the inspecting one)" \
  nsenter --net="/run/netns/$GW" "$AIRLOCK" attach --state-dir "$ST" --netns "$SBX" --control "$W/inspect.sock" \
  --allow only-a.airlock.test
attach_table=$(ip netns exec "$GW" nft list tables | sed -n 's/^table inet \(airlock_[0-9a-f]\{8\}\)$/\1/p' | head -1)
ip netns exec "$GW" nft list table inet "$attach_table" >"$W/attach1.nft" 2>&1 || true
expect "  gets the single-port table: no rule for :443" \
  bash -c "! grep -q 'dport 443' '$W/attach1.nft' && grep -q 'meta l4proto tcp redirect to :16001\$' '$W/attach1.nft'"
expect "  its allowed name works over HTTPS" body_is "origin says hello to only-a.airlock.test" sbx_curl https://only-a.airlock.test/
expect_not "  a name it does not allow fails" sbx_curl --resolve denied.airlock.test:443:$ATTACKER_IP https://denied.airlock.test/
expect "  and detach undoes it" nsenter --net="/run/netns/$GW" "$AIRLOCK" detach --state-dir "$ST" --netns "$SBX"
expect "nothing is left after the second detach" back_to_baseline

# 11. Many in a row: 100 sandboxes started and stopped leave nothing behind (bounded in time).
loop_start=$(date +%s)
ok=0
for i in $(seq 100); do
  run -- true 2>/dev/null && ok=$((ok + 1))
  (( $(date +%s) - loop_start < 300 )) || break
done
world_log "$ok runs of 'airlock run -- true' in $(( $(date +%s) - loop_start )) s"
expect "100 runs in a row all succeed (within 300 s)" test "$ok" -eq 100
expect "  and leave nothing behind" back_to_baseline

check_summary
