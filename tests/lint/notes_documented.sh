#!/usr/bin/env bash
# Every note a decision line may carry is in docs/decision-log.md, the log's contract. The
# notes are found where the code writes them: `notes.push_back(...)` / `emplace_back(...)`,
# a `note = ...` field that is pushed later, `.note(...)` (a close line's note), judge.cpp's
# `refused(reason::X, note)`, a session's `emit_session(e, ACTION, note)`, and the returns of
# a function named `*_note`. Each string literal there is a note, or part of one: a literal
# joined to code with `+` (or ending in `_` or `:`) is written as a pattern, the code's part
# being the doc's upper-case placeholder (`"stripped_" + n + "_special_addresses"` is
# `stripped_N_special_addresses` in the doc, `"limit:" + name` is `limit:NAME`). A note is
# documented when it stands between backticks in the doc; `KIND:VALUE` also when the doc has
# `KIND:UPPER` and `VALUE` (`spoke:tls`: `spoke:KIND` ... `tls`). Fails naming file:line.
# NOTES_LIST=1 prints what was found, file:line and note, to check the extraction by eye.
set -euo pipefail
top=${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
doc=$top/docs/decision-log.md
[[ -f $doc ]] || { echo "$doc: no such file"; echo "0 passed, 1 failed"; exit 1; }

# file:line<TAB>note, with '#' where the code fills in a number, a kind or a text.
dirs=()
for layer in app base record daemon control dns policy proxy certs launcher attribution evidence; do
  [[ -d $top/$layer ]] && dirs+=("$top/$layer")
done
if ((${#dirs[@]} == 0)); then
  echo "notes_documented.sh: no C++ folders under $top (is $top the source root?)"
  echo "0 passed, 1 failed"
  exit 1
fi
# shellcheck disable=SC2016 # the $ in the awk programs are awk's
notes=$(find "${dirs[@]}" \( -name '*.cpp' -o -name '*.hpp' \) -print0 | sort -z | xargs -0 awk '
  function flush() { if (pat != "") print at "\t" pat; pat = "" }
  FNR == 1 { stmt = ""; in_note_fn = 0 }
  {
    line = $0
    sub(/^[ \t]*\/\/.*/, "", line)   # comment lines
    sub(/[ \t]+\/\/ .*$/, "", line)  # trailing comments
  }
  # A function that returns notes: its name ends in _note.
  line ~ /^[a-z].*[a-z]_note\(.*\) *\{$/ { in_note_fn = 1; next }
  in_note_fn && line ~ /^\}/ { in_note_fn = 0 }
  {
    if (stmt != "") stmt = stmt " " line
    else if (match(line, /notes\.(push_back|emplace_back|insert)\(/) || match(line, /(^|[^a-z_])note_? = /) ||
             match(line, /(^|[^a-z_])notes = \{/) ||
             match(line, /\.note\(/) || match(line, /(^|[^a-z_])refused\(reason::[a-z_]+,[ \t]*/) ||
             match(line, /emit_session\([^,]+, "[a-z_]+",[ \t]*/) || (in_note_fn && match(line, /return /))) {
      stmt = substr(line, RSTART + RLENGTH); at = FILENAME ":" FNR
    } else next
  }
  stmt !~ /;/ { next }  # a statement over several lines: read on to its end
  {
    rest = stmt; stmt = ""; pat = ""; joins = 0
    while (match(rest, /"[^"]*"/)) {
      pre = substr(rest, 1, RSTART - 1); lit = substr(rest, RSTART + 1, RLENGTH - 2)
      rest = substr(rest, RSTART + RLENGTH)
      if (pre ~ /[=!]=[ \t]*$/ || rest ~ /^[ \t]*[=!]=/) continue  # compared, not written
      if (joins) pat = pat "#" lit                                 # "a" + n + "b"
      else { flush(); pat = (pre ~ /\+[ \t]*$/ ? "#" : "") lit }
      joins = rest ~ /^[ \t)]*\+[^?"]*\+[ \t]*"/
      if (joins) continue
      if (rest ~ /^[ \t)]*\+/ || pat ~ /[_:]$/) pat = pat "#"  # "limit:" + name; ("sni:" : "host:") + name
      flush()
    }
    flush()
  }')

if [[ ${NOTES_LIST:-} == 1 ]]; then printf '%s\n' "$notes"; fi

undocumented=$(printf '%s\n' "$notes" | awk -F'\t' -v top="$top/" '
  NR == FNR {
    if ($0 ~ /^```/) next
    n = split($0, part, "`")
    for (i = 2; i <= n; i += 2) {
      raw[part[i]] = 1
      t = part[i]; gsub(/[A-Z]+/, "#", t); pattern[t] = 1
    }
    next
  }
  $2 == "" { next }
  {
    note = $2
    if (note in raw) next
    if (note ~ /#/ && (note in pattern)) next
    if (note !~ /#/ && index(note, ":") > 0) {
      kind = substr(note, 1, index(note, ":")); value = substr(note, index(note, ":") + 1)
      if ((kind "#") in pattern && (value in raw)) next
    }
    shown = note; gsub(/#/, "*", shown)
    where = $1; if (index(where, top) == 1) where = substr(where, length(top) + 1)
    print where ": " shown
  }' "$doc" -)

checked=$(printf '%s\n' "$notes" | awk -F'\t' 'NF == 2 { print $2 }' | sort -u | wc -l)
places=$(printf '%s\n' "$notes" | awk -F'\t' 'NF == 2' | wc -l)
if ((checked == 0)); then
  # The code writes notes some way this script does not read: teach it that way.
  echo "notes_documented.sh: no notes found in the code under $top"
  echo "0 passed, 1 failed"
  exit 1
fi
if [[ -n $undocumented ]]; then
  echo "notes the code writes that docs/decision-log.md does not name (* is filled in by the code):"
  echo "$undocumented"
  echo "0 passed, 1 failed"
  exit 1
fi
echo "1 passed, 0 failed ($checked notes written at $places places, all in docs/decision-log.md)"
