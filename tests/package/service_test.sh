#!/usr/bin/env bash
# The service as systemd runs it: the package installed in a Debian image that boots systemd
# (podman, --network none: nothing reaches out), the unit started with all its hardening, and
# `airlock run` by alice (group airlock) and bob (not in it). Checked: the unit starts, its
# sockets are 0660 root:airlock, alice's CMD runs as alice and writes her files, her session's
# DNS lines carry user=alice (an allowed name allowed, a denied one denied), bob is turned away
# with what to do, `systemd-analyze security` inside rates it OK or better, reload and stop
# work. What this proves beyond tests/e2e/unprivileged_run_test.sh: the unit's sandboxing
# (read-only system, private /tmp, system-call filter, capability bounding set, ProtectProc)
# leaves the daemon able to make sandboxes, and bubblewrap able to run in them.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
: "${AIRLOCK_PACKAGE_OUT:?set AIRLOCK_PACKAGE_OUT to where tests/package/deb_test.sh put the package}"
if [[ $(id -u) -ne 0 ]]; then echo "needs root (debootstrap, podman)"; exit 77; fi
deb=$(ls "$AIRLOCK_PACKAGE_OUT"/airlock_*.deb 2>/dev/null | head -1 || true)
[[ -n $deb ]] || { echo "no package in $AIRLOCK_PACKAGE_OUT (package.deb makes it)"; exit 77; }
for tool in debootstrap podman catatonit; do
  command -v "$tool" >/dev/null || { echo "missing $tool: run deploy/install-deps.sh"; exit 77; }
done
W=$(mktemp -d /tmp/airlock-service.XXXXXX)
tag=localhost/airlock-systemd-test:$$
box=airlock-systemd-test-$$
# As in image_test.sh: ulimits this machine's hard limits allow, and runc (crun refuses a
# hybrid cgroup layout).
printf '[containers]\ndefault_ulimits = ["nofile=4096:4096", "nproc=4096:4096"]\n' >"$W/containers.conf"
export CONTAINERS_CONF=$W/containers.conf
runtime=()
command -v runc >/dev/null && runtime=(--runtime runc)
cleanup() {
  podman "${runtime[@]}" rm -f "$box" >/dev/null 2>&1 || true
  podman rmi -f "$tag" >/dev/null 2>&1 || true
  rm -rf "$W"
}
trap cleanup EXIT
source "$src/tests/e2e/lib/check.sh"
in_box() { podman exec "$box" "$@"; }

start=$(date +%s)
if AIRLOCK_IMAGE_EXTRA="systemd systemd-sysv dbus procps" AIRLOCK_IMAGE_INIT=1 \
  "$src/deploy/image/build-image.sh" "$deb" "$tag" >"$W/image.log" 2>&1; then
  pass "an image with systemd and the package builds ($(($(date +%s) - start)) s)"
else
  fail "an image with systemd and the package builds"
  tail -20 "$W/image.log" | sed 's/^/     /'
  check_summary
  exit 1
fi
# systemd as PID 1 needs to mount and to manage cgroups: a privileged container, with no network.
podman "${runtime[@]}" run -d --name "$box" --privileged --network none --systemd=always "$tag" >/dev/null
state=
for _ in $(seq 120); do
  state=$(in_box systemctl is-system-running 2>/dev/null || true)
  [[ $state == running || $state == degraded ]] && break
  sleep 0.5
done
expect "systemd boots in the image ($state)" bash -c "[[ '$state' == running || '$state' == degraded ]]"

in_box useradd --create-home --groups airlock alice
in_box useradd --create-home bob
in_box install -d -o alice -g alice /home/alice/proj
expect "systemctl start airlock" in_box systemctl start airlock
expect "  the unit is active" in_box systemctl is-active --quiet airlock
expect "  the sandbox and control sockets are 0660 root:airlock" \
  bash -c "[[ \$(podman exec $box stat -c '%a %U %G' /run/airlock/sandbox.sock /run/airlock/control.sock | sort -u) == '660 root airlock' ]]"

set +e
in_box su alice -c 'cd /home/alice/proj && airlock run -- sh -c "id -un; echo hi >made.txt; getent hosts registry.npmjs.org; getent hosts denied.example; exit 0"' \
  >"$W/alice.out" 2>"$W/alice.err"
status=$?
set -e
sed 's/^/     /' "$W/alice.err"
expect "alice's airlock run exits 0" test "$status" -eq 0
expect "  CMD ran as alice" bash -c "head -1 '$W/alice.out' | grep -qx alice"
expect "  the file it wrote is alice's" bash -c "[[ \$(podman exec $box stat -c %U /home/alice/proj/made.txt) == alice ]]"
in_box cat /var/log/airlock/decisions.jsonl >"$W/decisions.jsonl"
sid=$(sed -n 's/^airlock: session \([^ ]*\) started.*/\1/p' "$W/alice.err" | head -1)
expect "  her session's DNS lines carry user=alice: the allowed name allowed" \
  line event=dns session="$sid" name=registry.npmjs.org verdict=allow 'labels~="user": "alice"'
expect "  and the denied one denied" line event=dns session="$sid" name=denied.example verdict=deny
expect "  and alice can run the 'airlock explain' her run printed" \
  bash -c "podman exec $box su alice -c 'airlock explain $sid' | grep -q denied.example"
expect "  (the decision log is 0640 root:airlock)" \
  bash -c "[[ \$(podman exec $box stat -c '%a %U %G' /var/log/airlock/decisions.jsonl) == '640 root airlock' ]]"

set +e
in_box su bob -c 'cd /home/bob && airlock run -- true' >/dev/null 2>"$W/bob.err"
status=$?
set -e
expect "bob, outside group airlock, is turned away (125) and told to join it" \
  bash -c "[[ $status -eq 125 ]] && grep -q 'usermod -aG airlock' '$W/bob.err'"

in_box systemd-analyze security airlock >"$W/security.txt" 2>&1 || true
exposure=$(sed -n 's/.*Overall exposure level for airlock.service: \([0-9.]*\).*/\1/p' "$W/security.txt")
echo "     $(grep -o 'Overall.*' "$W/security.txt")"
expect "systemd-analyze security rates the running unit OK or better (below 5.0)" \
  python3 -c "import sys; sys.exit(0 if '$exposure' and float('$exposure') < 5.0 else 1)"
expect "systemctl reload airlock (SIGHUP) keeps it active" \
  bash -c "podman exec $box systemctl reload airlock && sleep 1 && podman exec $box systemctl is-active --quiet airlock"
expect "systemctl stop airlock stops it" in_box systemctl stop airlock
expect "  and its sockets are gone" bash -c "! podman exec $box test -e /run/airlock/sandbox.sock"
check_summary
