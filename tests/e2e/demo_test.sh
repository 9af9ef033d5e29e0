#!/usr/bin/env bash
# The README's first command ends in deploy/demo.sh: it must run to its end, with the
# binary under test, and show what it promises: the allowed fetch, both denials, each
# decision explained, and an attacker's log that stayed empty.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
: "${AIRLOCK:?set AIRLOCK to the airlock binary}"
if [[ $(id -u) -ne 0 ]]; then echo "needs root (network namespaces)"; exit 77; fi
out=$(mktemp)
trap 'rm -f "$out"' EXIT
failed=0
if AIRLOCK=$AIRLOCK "$here/../../deploy/demo.sh" >"$out" 2>&1; then echo "ok   the demo runs to its end"
else echo "FAIL the demo exited with $?"; failed=1; fi
for want in "origin says hello to registry.npmjs.org" \
  "Could not resolve host: attacker.example" \
  "alert access denied" \
  "connect allow registry.npmjs.org (tls to 203.0.113.10:443, upstream 203.0.113.10:443)" \
  "dns     deny  attacker.example (A -> NXDOMAIN)" \
  "connect deny  attacker.example (tls to 203.0.113.66:443, upstream none)" \
  "session any  closed: 4 DNS queries, 1 connection(s) allowed, 1 denied" \
  "attacker.example's access log: EMPTY - nothing reached it"; do
  if grep -qF -- "$want" "$out"; then echo "ok   shows: $want"; else echo "FAIL shows: $want"; failed=1; fi
done
((failed == 0)) || sed 's/^/     /' "$out"
exit "$failed"
