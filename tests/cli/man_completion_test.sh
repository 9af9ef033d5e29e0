#!/usr/bin/env bash
# The manual pages and the bash completion, both made from the binary's own --help: every
# command has a page that groff reads without a warning and that names each of the
# command's options; the completion offers the commands and each command's options.
set -uo pipefail
AIRLOCK=${AIRLOCK:?set AIRLOCK to the airlock binary}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
command -v groff >/dev/null || { echo "missing groff: run deploy/install-deps.sh"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
passed=0 failed=0
ok() { passed=$((passed + 1)); echo "ok   $1"; }
bad() { failed=$((failed + 1)); echo "FAIL $1"; }

python3 "$root/deploy/man/render_man.py" "$AIRLOCK" "$tmp/man" 0.0.0 >/dev/null || bad "render_man.py ran"
commands=$("$AIRLOCK" --help | awk '/^Commands:/ {f = 1; next} f && /^  [a-z]/ {print $1} f && /^$/ {f = 0}')
[[ -n $commands ]] || bad "airlock --help lists commands"
for page in airlock $(sed 's/^/airlock-/' <<<"$commands"); do
  f=$tmp/man/$page.1
  if [[ ! -s $f ]]; then bad "$page.1 exists"; continue; fi
  warnings=$(groff -man -ww -z "$f" 2>&1)
  [[ -z $warnings ]] && ok "$page.1: groff reads it without a warning" || { bad "$page.1 warns"; echo "$warnings" | head -5; }
done
for c in $commands; do
  missing=""
  for opt in $("$AIRLOCK" "$c" --help | grep -oE -- '(^|[ ,])--[a-z][a-z0-9-]*' | tr -d ' ,' | sort -u); do
    grep -qF -- "${opt//-/\\-}" "$tmp/man/airlock-$c.1" || missing+=" $opt"
  done
  [[ -z $missing ]] && ok "airlock-$c.1 names every option of 'airlock $c --help'" || bad "airlock-$c.1 lacks$missing"
done
grep -q '^\.SH "EXIT STATUS"' "$tmp/man/airlock-run.1" && ok "airlock-run.1 has its exit status section" ||
  bad "airlock-run.1 has no EXIT STATUS"

# shellcheck source=/dev/null
source "$root/deploy/completion/airlock.bash"
complete_words() { COMP_WORDS=("$AIRLOCK" "$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); _airlock; echo "${COMPREPLY[*]}"; }
[[ $(complete_words "") == "$(echo $commands) --help" ]] && ok "completion offers every command" ||
  bad "completion offers: $(complete_words "")"
[[ $(complete_words run --mem) == --memory ]] && ok "completion: 'airlock run --mem' -> --memory" ||
  bad "completion of 'airlock run --mem': $(complete_words run --mem)"
[[ $(complete_words nft-rules --si) == --sidecar ]] && ok "completion: 'airlock nft-rules --si' -> --sidecar" ||
  bad "completion of 'airlock nft-rules --si': $(complete_words nft-rules --si)"
[[ " $(complete_words run -- bas) " == *" bash "* ]] && ok "completion after 'run --' offers commands" ||
  bad "completion after 'run --': $(complete_words run -- bas)"

echo "$passed passed, $failed failed, 0 skipped"
[[ $failed -eq 0 ]]
