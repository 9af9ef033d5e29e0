#!/usr/bin/env bash
# The Debian package, on this machine: built from a clean copy of the tree with Debian's own
# flags (dpkg-buildpackage), lintian without errors, installed, its files and conffiles where
# they belong, group airlock and /run/netns made, `airlock check` and the unit's ExecStartPre
# passing on the installed policy, removed (the edited conffile kept) and purged (nothing
# left). Needs root; an airlock package installed by someone else is left alone (skipped).
set -euo pipefail
: "${AIRLOCK_SOURCE:?set AIRLOCK_SOURCE to the source tree}"
if [[ $(id -u) -ne 0 ]]; then echo "needs root (dpkg -i)"; exit 77; fi
for tool in dpkg-buildpackage lintian fakeroot; do
  command -v "$tool" >/dev/null || { echo "missing $tool: run deploy/install-deps.sh"; exit 77; }
done
if dpkg-query -W -f='${Status}' airlock 2>/dev/null | grep -q installed; then
  echo "a package named airlock is installed already; not ours to replace"; exit 77
fi
W=$(mktemp -d /tmp/airlock-deb.XXXXXX)
installed=0
# Debian leaves a package's system group behind on purge; the test removes the one it made.
had_group=$(getent group airlock || true)
cleanup() {
  if [[ $installed == 1 ]]; then dpkg -P airlock >/dev/null 2>&1 || true; fi
  if [[ -z $had_group ]] && getent group airlock >/dev/null; then groupdel airlock || true; fi
  rm -rf "$W"
}
trap cleanup EXIT
source "$AIRLOCK_SOURCE/tests/e2e/lib/check.sh"

# A clean copy: what git tracks (or, outside a checkout, everything but build trees).
mkdir -p "$W/src"
if git -C "$AIRLOCK_SOURCE" rev-parse --git-dir >/dev/null 2>&1; then
  git -C "$AIRLOCK_SOURCE" ls-files -z --cached --others --exclude-standard |
    (cd "$AIRLOCK_SOURCE" && tar --null -T - -cf -) | tar -C "$W/src" -xf -
else
  tar -C "$AIRLOCK_SOURCE" --exclude=./build --exclude='./obj-*' -cf - . | tar -C "$W/src" -xf -
fi
start=$(date +%s)
if (cd "$W/src" && DEB_BUILD_OPTIONS="parallel=$(nproc) nocheck" dpkg-buildpackage -b -us -uc) >"$W/build.log" 2>&1; then
  pass "dpkg-buildpackage builds the package with Debian's flags ($(($(date +%s) - start)) s)"
else
  fail "dpkg-buildpackage builds the package with Debian's flags"
  tail -40 "$W/build.log" | sed 's/^/     /'
  check_summary
  exit 1
fi
deb=$(ls "$W"/airlock_*.deb)
# The image test (tests/package/image_test.sh) builds on this package.
if [[ -n ${AIRLOCK_PACKAGE_OUT:-} ]]; then
  mkdir -p "$AIRLOCK_PACKAGE_OUT" && rm -f "$AIRLOCK_PACKAGE_OUT"/airlock_*.deb && cp "$deb" "$AIRLOCK_PACKAGE_OUT/"
fi
echo "     $(grep -c 'warning:' "$W/build.log" || true) compiler warnings under Debian's flags"
lintian --fail-on error "$deb" >"$W/lintian.txt" 2>&1 && lint_ok=1 || lint_ok=0
sed 's/^/     /' "$W/lintian.txt"
expect "lintian finds no errors" test "$lint_ok" -eq 1

contents=$(dpkg-deb -c "$deb")
for f in ./usr/bin/airlock ./etc/airlock/policy.yaml ./etc/logrotate.d/airlock ./usr/share/man/man1/airlock.1.gz \
  ./usr/share/man/man1/airlock-run.1.gz ./usr/share/bash-completion/completions/airlock \
  airlock.service ./usr/lib/tmpfiles.d/airlock.conf ./usr/lib/sysusers.d/airlock.conf; do
  expect "the package holds $f" grep -q -- "$f" <<<"$contents"
done
expect "/etc/airlock/policy.yaml is a conffile" \
  bash -c "dpkg-deb -e '$deb' '$W/control' && grep -qx /etc/airlock/policy.yaml '$W/control/conffiles'"

expect "it installs" dpkg -i "$deb"
installed=1
if [[ -z $had_group ]]; then
  expect "  group airlock exists after it (systemd-sysusers)" getent group airlock
else
  skip "  group airlock exists after it (systemd-sysusers)" "the group existed before: the check could not fail"
fi
expect "  /run/netns exists after it" test -d /run/netns
expect "  airlock check passes on the installed policy" /usr/bin/airlock check -c /etc/airlock/policy.yaml
unit=$(ls /usr/lib/systemd/system/airlock.service /lib/systemd/system/airlock.service 2>/dev/null | head -1)
pre=$(sed -n 's/^ExecStartPre=//p' "$unit")
expect "  the unit's ExecStartPre ($pre) passes" bash -c "$pre"
expect "  systemd-analyze verify accepts the installed unit" systemd-analyze verify --man=no "$unit"
expect "  the manual page is found" bash -c 'man -w airlock-run >/dev/null'

echo "# edited by the package test" >>/etc/airlock/policy.yaml
expect "it removes" dpkg -r airlock
expect "  the binary is gone" test ! -e /usr/bin/airlock
expect "  the edited policy is kept" grep -q "edited by the package test" /etc/airlock/policy.yaml
expect "it purges" dpkg -P airlock
installed=0
expect "  and nothing of it is left" \
  bash -c '! test -e /etc/airlock/policy.yaml && ! test -e /var/log/airlock && ! dpkg-query -W airlock 2>/dev/null | grep -q .'
check_summary
