#!/usr/bin/env bash
# `airlock run` without root, end to end: the daemon (root, in the world's gateway namespace,
# as the service runs it) has a sandbox socket 0660 to group nogroup; the caller is nobody
# (uid 65534, setpriv, no other groups). Checked: CMD runs as the caller, never as root, and
# what it writes in the working directory is the caller's; allowed and denied traffic as in a
# root run, with the session labelled user=nobody; exit statuses and signals pass through; a
# caller that is killed takes its sandbox down; a uid outside the group is turned away with
# what to do; the flags that would point root elsewhere are refused; a path the caller cannot
# open is never shown; a forged call (descriptors that are not the paths it names, an
# LD_PRELOAD in its environment) gains nothing; malformed calls and a flood of connections
# that send nothing are refused with their reason.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)

WORLD_RECORDS="allowed.airlock.test 203.0.113.10
denied.airlock.test 203.0.113.66"
WORLD_CERT_NAMES="allowed.airlock.test denied.airlock.test"
source "$here/lib/world.sh"
source "$here/lib/check.sh"
for tool in bwrap nsenter setpriv; do
  command -v "$tool" >/dev/null || { echo "missing $tool: run deploy/install-deps.sh"; exit 77; }
done
world_up
export W
# nobody must reach the sockets, the project and the binary: the world's directory is
# root's 0700 by default.
chmod 755 "$W"
BIN="$W/bin/airlock"
mkdir -p "$W/bin" && cp "$AIRLOCK" "$BIN" && chmod 755 "$W/bin" "$BIN"

cat >"$W/airlock.yaml" <<YAML
version: 1
listen:
  proxy: [0.0.0.0:15001, 0.0.0.0:15443]
  dns: 0.0.0.0:15053
  control: $W/control.sock
  sandbox: $W/sandbox.sock
  socket_group: nogroup
upstream_dns: [$DNS_IP]
log:
  decisions: $W/decisions.jsonl
sandboxes:
  state_dir: $W/state
policies:
  closed:
    allow:
      - host: nothing.airlock.test
default_policy: closed
YAML
# nsenter, not ip netns exec: /sys/fs/cgroup stays visible for the sandboxes' limits.
: >"$W/airlock.stderr"
nsenter --net="/run/netns/$GW" "$BIN" daemon -c "$W/airlock.yaml" 2>"$W/airlock.stderr" &
world_await_airlock $!

expect "the sandbox socket is 0660, owned by root and group nogroup" \
  bash -c '[[ $(stat -c "%a %U %G" "$W/sandbox.sock") == "660 root nogroup" ]]'
expect "  and so is the control socket" bash -c '[[ $(stat -c "%a %U %G" "$W/control.sock") == "660 root nogroup" ]]'

mkdir -p "$W/proj" "$W/home"
chown nobody:nogroup "$W/proj" "$W/home"
cd "$W/proj"
export W BIN
# as_nobody CMD...: CMD as uid 65534, group 65534, no supplementary groups, a small environment.
as_nobody() {
  setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all \
    env -i HOME="$W/home" PATH=/usr/sbin:/usr/bin:/sbin:/bin USER=nobody "$@"
}
urun() { as_nobody "$BIN" run --sandbox-socket "$W/sandbox.sock" "$@"; }
session_of() { sed -n 's/^airlock: session \([^ ]*\) started.*/\1/p' "$1" | head -1; }
in_curl='curl -sS --max-time 10 --cacert ca.crt'
cp "$W/ca.crt" "$W/proj/ca.crt"

# --- CMD as the caller ---------------------------------------------------------------------
set +e
urun --allow allowed.airlock.test -- sh -c "id -u; id -g; echo written >made-here.txt; $in_curl https://allowed.airlock.test/ >allowed.out; echo allowed=\$?; $in_curl https://denied.airlock.test/ >/dev/null 2>&1; echo denied=\$?" \
  >"$W/run1.out" 2>"$W/run1.err"
status=$?
set -e
sid=$(session_of "$W/run1.err")
expect "a run by nobody exits 0" test "$status" -eq 0
expect "  CMD ran as uid 65534 and gid 65534, not as root" \
  bash -c '[[ $(sed -n 1p "$W/run1.out") == 65534 && $(sed -n 2p "$W/run1.out") == 65534 ]]'
expect "  the file it wrote in the working directory belongs to nobody:nogroup" \
  bash -c '[[ $(stat -c "%u:%g" "$W/proj/made-here.txt") == 65534:65534 ]]'
expect "  the allowed host answered" grep -qx 'allowed=0' "$W/run1.out"
expect "  the denied host did not" bash -c 'grep -q "^denied=" "$W/run1.out" && ! grep -qx "denied=0" "$W/run1.out"'
expect "  the session was started and named on stderr" test -n "$sid"
expect "  its session carries user=nobody" line event=session session="$sid" action=open 'labels~="user": "nobody"'
expect "  the allowed connection was logged in that session" \
  line event=connect session="$sid" name=allowed.airlock.test verdict=allow
expect "  the denied name was refused by DNS in that session" line event=dns session="$sid" name=denied.airlock.test verdict=deny
expect "  the summary line came back to the caller" grep -q "session $sid ended after" "$W/run1.err"
expect "  the caller's umask reached CMD (0640 under umask 027)" bash -c '
  cd "$W/proj" && setpriv --reuid=65534 --regid=65534 --clear-groups bash -c "umask 027; \"$BIN\" run --sandbox-socket \"$W/sandbox.sock\" -- sh -c \"echo x >masked.txt\"" 2>/dev/null &&
  [[ $(stat -c %a masked.txt) == 640 ]]'
expect "  a limit is installed for a caller's sandbox too (--memory, --pids)" \
  urun --memory 128M --pids 64 -- true

# --- under sudo, as root: CMD runs as SUDO_UID --------------------------------------------
set +e
nsenter --net="/run/netns/$GW" env SUDO_UID=65534 SUDO_GID=65534 SUDO_USER=nobody HOME=/root \
  "$BIN" run --state-dir "$W/state-root" --control "$W/control.sock" -- sh -c 'id -u; echo "$HOME"; echo x >by-sudo.txt' \
  >"$W/sudo.out" 2>"$W/sudo.err"
status=$?
set -e
expect "a root run under sudo exits 0" test "$status" -eq 0
expect "  CMD ran as the sudo caller (65534), with the caller's HOME" \
  bash -c '[[ $(sed -n 1p "$W/sudo.out") == 65534 && $(sed -n 2p "$W/sudo.out") == "$(getent passwd nobody | cut -d: -f6)" ]]'
expect "  and its file belongs to the caller" bash -c '[[ $(stat -c %u "$W/proj/by-sudo.txt") == 65534 ]]'
set +e
nsenter --net="/run/netns/$GW" env -u SUDO_UID "$BIN" run --state-dir "$W/state-root" --control "$W/control.sock" \
  -- id -u >"$W/root.out" 2>/dev/null
set -e
expect "  a root login (no SUDO_UID) still runs CMD as root" grep -qx 0 "$W/root.out"

# --- statuses and signals -------------------------------------------------------------------
set +e
urun -- sh -c 'exit 7' 2>/dev/null
status=$?
set -e
expect "CMD's exit status comes back through the daemon (7)" test "$status" -eq 7
set +e
urun -- no-such-command-here 2>"$W/nf.err"
status=$?
set -e
expect "  a missing CMD is 127" test "$status" -eq 127

urun -- sh -c 'trap "echo got-term >term.txt; exit 3" TERM; echo up >up.txt; while :; do sleep 0.1; done' \
  2>"$W/sig.err" &
shell=$!
for _ in $(seq 100); do [[ -f up.txt ]] && break; sleep 0.05; done
# The caller's airlock itself (the background job is a subshell around setpriv around it).
client=$(pgrep -n -f -- "$BIN run --sandbox-socket")
kill -TERM "$client"
set +e
wait "$shell"
status=$?
set -e
expect "SIGTERM to the caller reaches CMD through the daemon" \
  bash -c 'grep -qx got-term term.txt || { cat "$W/sig.err"; tail -5 "$W/airlock.stderr"; exit 1; }'
expect "  and CMD's status (3) is the caller's" test "$status" -eq 3

urun -- sh -c 'echo up >up2.txt; sleep 60' 2>/dev/null &
shell=$!
for _ in $(seq 100); do [[ -f up2.txt ]] && break; sleep 0.05; done
records_during=$(find "$W/state" -name '*.state' | wc -l)
kill -KILL "$(pgrep -n -f -- "$BIN run --sandbox-socket")"
wait "$shell" 2>/dev/null || true
for _ in $(seq 200); do
  [[ $(find "$W/state" -name '*.state' | wc -l) -eq 0 ]] && ! pgrep -f "sleep [6]0" >/dev/null && break
  sleep 0.05
done
expect "a killed caller's sandbox existed while it ran" test "$records_during" -ge 1
expect "  and is taken down after it (no record, no CMD left)" \
  bash -c '[[ $(find "$W/state" -name "*.state" | wc -l) -eq 0 ]] && ! pgrep -f "sleep [6]0" >/dev/null'

# --- refusals -------------------------------------------------------------------------------
set +e
setpriv --reuid=65533 --regid=65533 --clear-groups env -i PATH=/usr/bin:/bin "$BIN" run \
  --sandbox-socket "$W/sandbox.sock" -- true 2>"$W/outsider.err"
status=$?
set -e
expect "a uid outside the socket's group is turned away (125)" test "$status" -eq 125
expect "  and told to join the group" grep -q "usermod -aG" "$W/outsider.err"
for flag in "--state-dir /etc" "--pool 10.0.0.0/8" "--control /tmp/x.sock" "--copy-cwd" "-c /etc/passwd"; do
  set +e
  # shellcheck disable=SC2086
  urun $flag -- true 2>"$W/flag.err"
  status=$?
  set -e
  expect "$flag is refused to a caller (125, root's alone)" \
    bash -c "[[ $status -eq 125 ]] && grep -q \"root's alone\" \"$W/flag.err\""
done
mkdir -p "$W/private" && chmod 700 "$W/private" && echo secret >"$W/private/key" && chmod 644 "$W/private/key"
set +e
urun --ro "$W/private/key" -- cat "$W/private/key" >"$W/private.out" 2>"$W/private.err"
status=$?
set -e
expect "--ro of a file the caller cannot reach is refused before anything is made" \
  bash -c "[[ $status -eq 125 ]] && grep -q 'Permission denied' \"$W/private.err\" && ! grep -q secret \"$W/private.out\""

# A forged call: it names --ro W/private/key but sends /dev/null's descriptor in its place,
# and asks for LD_PRELOAD, which must reach neither the root helper nor CMD.
cat >"$W/forge.py" <<'PY'
import json, os, socket, sys
w = sys.argv[1]
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.connect(w + "/sandbox.sock")
call = {"args": ["--ro", w + "/private/key", "--", "cat", w + "/private/key"],
        "env": ["PATH=/usr/bin:/bin", "HOME=" + w + "/home", "LD_PRELOAD=/nonexistent/airlock-forged.so"],
        "paths": 1, "umask": 0o22}
fds = [0, 1, 2, os.open(".", os.O_PATH | os.O_DIRECTORY), os.open("/dev/null", os.O_PATH)]
socket.send_fds(s, [json.dumps(call).encode()], fds)
print(s.recv(4096).decode())
PY
as_nobody python3 "$W/forge.py" "$W" >"$W/forge.out" 2>"$W/forge.err" || true
expect "a forged call's path is refused: the descriptor is not that file" \
  grep -q "not a path you opened" "$W/forge.err"
expect "  the secret was not shown, and the status was 125" \
  bash -c '! grep -q secret "$W/forge.out" && grep -q "\"exit\":125" "$W/forge.out"'
expect "  LD_PRELOAD reached no process (ld.so would have complained)" bash -c '! grep -q "airlock-forged" "$W/forge.err"'
# The same forged environment with a path it does open, so CMD starts: still no LD_PRELOAD.
sed -i 's|"--ro", w + "/private/key", "--", "cat", w + "/private/key"|"--", "sh", "-c", "echo preload=${LD_PRELOAD-unset}"|; s|"paths": 1|"paths": 0|; s|, os.open("/dev/null", os.O_PATH)\]|]|' "$W/forge.py"
as_nobody python3 "$W/forge.py" "$W" >"$W/forge2.out" 2>"$W/forge2.err" || true
expect "  with CMD started: LD_PRELOAD was filtered out of CMD's environment" grep -qx "preload=unset" "$W/forge2.out"
expect "  and ld.so never saw it" bash -c '! grep -q "airlock-forged" "$W/forge2.err"'

# Malformed calls, each refused with its reason before anything is made.
cat >"$W/malformed.py" <<'PY'
import json, os, socket, sys
w, kind = sys.argv[1], sys.argv[2]
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.connect(w + "/sandbox.sock")
call = {"args": ["--", "true"], "env": ["PATH=/usr/bin:/bin"], "paths": 0, "umask": 0o22}
cwd = os.open(".", os.O_PATH | os.O_DIRECTORY)
if kind == "garbage":
    socket.send_fds(s, [b"not json"], [0, 1, 2, cwd])
elif kind == "count":
    call["paths"] = 2
    socket.send_fds(s, [json.dumps(call).encode()], [0, 1, 2, cwd])
elif kind == "notdir":
    socket.send_fds(s, [json.dumps(call).encode()], [0, 1, 2, os.open("/dev/null", os.O_PATH)])
print(s.recv(4096).decode())
PY
for case in "garbage:is one JSON object" "count:names 2 paths but carries 4 descriptors" \
  "notdir:fourth descriptor is not the working directory"; do
  as_nobody python3 "$W/malformed.py" "$W" "${case%%:*}" >"$W/malformed.out" 2>&1 || true
  expect "a malformed call (${case%%:*}) is refused: ${case#*:}" \
    bash -c "grep -q '\"error\"' '$W/malformed.out' && grep -q '${case#*:}' '$W/malformed.out'"
done
# 64 connections that send nothing hold every waiting slot: the 65th is told to try again,
# and once they close, a run works again.
cat >"$W/pending.py" <<'PY'
import socket, sys
w = sys.argv[1]
held = []
for _ in range(64):
    c = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    c.connect(w + "/sandbox.sock")
    held.append(c)
extra = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
extra.connect(w + "/sandbox.sock")
extra.settimeout(5)
print(extra.recv(4096).decode())
PY
as_nobody python3 "$W/pending.py" "$W" >"$W/pending.out" 2>&1 || true
expect "with 64 calls waiting for their request, one more is told to try again" \
  grep -q "too many sandbox calls" "$W/pending.out"
expect "  and once they are gone, a run works again" urun -- true

expect "the daemon is still up after all of it" kill -0 "$AIRLOCK_PID"
expect "no sanitizer report from the daemon or any helper" \
  bash -c '! grep -l -E "Sanitizer|runtime error:" "$W/airlock.stderr" "$W"/*.err'
expect "no sandbox record is left" bash -c '[[ $(find "$W/state" -name "*.state" | wc -l) -eq 0 ]]'
check_summary
