#!/usr/bin/env bash
# Audit mode: what the policy would deny is logged as audit-deny and passes, so a team can
# learn what a workload needs; special addresses and always_deny stay closed even so.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
WORLD_RECORDS="listed.airlock.test 203.0.113.10
unlisted.airlock.test 203.0.113.10
internal.airlock.test 10.0.0.5
blocked.airlock.test 203.0.113.10"
WORLD_CERT_NAMES="listed.airlock.test unlisted.airlock.test blocked.airlock.test"
source "$here/lib/world.sh"
source "$here/lib/check.sh"
world_up
world_airlock_config audit-sandbox <<'YAML'
      - host: listed.airlock.test
YAML
# The same file, with the policy in audit mode and an operator floor.
sed -i 's/^  sandbox:$/  sandbox:\n    mode: audit/' "$W/airlock.yaml"
printf 'always_deny:\n  - host: blocked.airlock.test\n' >>"$W/airlock.yaml"
world_start_airlock -c "$W/airlock.yaml"

expect "a listed name works as usual" body_is "origin says hello to listed.airlock.test" sbx_curl https://listed.airlock.test/
expect "  logged as allow" line event=connect name=listed.airlock.test verdict=allow
expect "an unlisted name passes in audit mode" \
  body_is "origin says hello to unlisted.airlock.test" sbx_curl https://unlisted.airlock.test/
expect "  its DNS line says audit-deny host_not_allowed" \
  line event=dns name=unlisted.airlock.test qtype=A verdict=audit-deny reason=host_not_allowed rcode=NOERROR
expect "  its connect line says audit-deny, with the bytes that passed" \
  line event=connect name=unlisted.airlock.test verdict=audit-deny reason=host_not_allowed upstream=203.0.113.10:443
expect_not "an always_deny name stays closed in audit mode" sbx_curl https://blocked.airlock.test/
expect "  logged as deny" line event=dns name=blocked.airlock.test verdict=deny reason=host_denied
expect_not "a name that resolves to a private address stays closed in audit mode" \
  sbx_curl -f --resolve internal.airlock.test:80:203.0.113.10 http://internal.airlock.test/
expect "  logged as deny private_address" line event=connect name=internal.airlock.test verdict=deny reason=private_address
check_summary
