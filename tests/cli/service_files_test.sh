#!/usr/bin/env bash
# The service files in deploy/: the unit passes `systemd-analyze verify` (its ExecStart pointed
# at the built binary), its exposure under `systemd-analyze security --offline` is "OK" or
# better (below 5.0), it keeps the capabilities the daemon needs and no more, and the service's
# policy (the default plus the sandbox socket, derived at build time) passes `airlock check`.
set -euo pipefail
: "${AIRLOCK:?set AIRLOCK to the airlock binary}" "${AIRLOCK_SOURCE:?}" "${AIRLOCK_SERVICE_POLICY:?}"
command -v systemd-analyze >/dev/null || { echo "no systemd-analyze (install systemd)"; exit 77; }
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
source "$AIRLOCK_SOURCE/tests/e2e/lib/check.sh"

unit="$W/airlock.service"
sed "s|/usr/bin/airlock|$AIRLOCK|g" "$AIRLOCK_SOURCE/deploy/systemd/airlock.service" >"$unit"
expect "systemd-analyze verify accepts the unit" systemd-analyze verify --man=no "$unit"
systemd-analyze security --offline=true "$unit" >"$W/security.txt" 2>&1 || true
exposure=$(sed -n 's/.*Overall exposure level for airlock.service: \([0-9.]*\).*/\1/p' "$W/security.txt")
echo "     exposure: $exposure ($(grep -o 'Overall.*' "$W/security.txt"))"
expect "its exposure is OK or better (below 5.0)" \
  python3 -c "import sys; sys.exit(0 if '$exposure' and float('$exposure') < 5.0 else 1)"
caps=$(sed -n 's/^CapabilityBoundingSet=//p' "$unit")
for cap in CAP_NET_ADMIN CAP_SYS_ADMIN CAP_SETUID CAP_SETGID CAP_KILL CAP_SYS_PTRACE; do
  expect "  the bounding set keeps $cap" grep -qw "$cap" <<<"$caps"
done
for cap in CAP_SYS_MODULE CAP_SYS_RAWIO CAP_CHOWN CAP_MKNOD CAP_SYS_BOOT CAP_SYS_RESOURCE CAP_NET_BIND_SERVICE; do
  expect_not "  and leaves out $cap" grep -qw "$cap" <<<"$caps"
done
# Each of these covers part of the service's /proc, after which the kernel refuses bubblewrap's
# /proc in a user namespace (checked by hand: a bind over /proc/kmsg or a read-only /proc/sys
# makes 'bwrap --proc /proc' fail with EPERM as an unprivileged user).
for setting in ProtectKernelTunables=yes ProtectKernelLogs=yes ProcSubset=pid; do
  expect_not "  and does not set $setting (sandboxes could not mount /proc)" grep -qx "$setting" "$unit"
done
expect "the unit checks the config before it starts the daemon" grep -q '^ExecStartPre=.* check -c /etc/airlock/policy.yaml' "$unit"
expect "tmpfiles makes /run/netns" grep -q '^d /run/netns ' "$AIRLOCK_SOURCE/deploy/systemd/airlock.tmpfiles"
expect "sysusers makes group airlock" grep -q '^g airlock ' "$AIRLOCK_SOURCE/deploy/systemd/airlock.sysusers"
expect "logrotate reopens the log with SIGHUP" grep -q 'kill --signal=HUP' "$AIRLOCK_SOURCE/deploy/systemd/airlock.logrotate"
expect "the service's policy passes airlock check" "$AIRLOCK" check -c "$AIRLOCK_SERVICE_POLICY"
expect "  and gives the sandbox socket to group airlock" \
  bash -c "grep -q '^  sandbox: /run/airlock/sandbox.sock' '$AIRLOCK_SERVICE_POLICY' && grep -q '^  socket_group: airlock' '$AIRLOCK_SERVICE_POLICY'"
check_summary
