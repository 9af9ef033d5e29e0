#!/usr/bin/env bash
# The C++ sources must be laid out as .clang-format at the top of the tree says (K&R braces,
# 120 columns, ...). Fix a failure with: git ls-files '*.cpp' '*.hpp' | xargs clang-format -i
# The config is tuned for clang-format 14 (Debian bookworm); another major version may lay
# some lines out differently.
set -euo pipefail
top=${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
clang_format=${CLANG_FORMAT:-clang-format}
if ! command -v "$clang_format" >/dev/null 2>&1; then
  echo "format.sh: $clang_format not found; install the clang-format Debian package (apt-get install clang-format)"
  echo "0 passed, 1 failed"
  exit 1
fi
if [[ ! -f $top/.clang-format ]]; then
  echo "format.sh: no $top/.clang-format (is $top the source root?)"
  echo "0 passed, 1 failed"
  exit 1
fi
# The C++ folders; one that does not exist (yet) is skipped.
dirs=(app attribution base bench certs control daemon dns evidence launcher policy proxy record tests)
files=()
if git -C "$top" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  # Tracked files, and new ones not yet added (but not ignored ones, such as a build tree).
  while IFS= read -r -d '' f; do
    [[ -f $top/$f ]] && files+=("$top/$f")
  done < <(git -C "$top" ls-files -z --cached --others --exclude-standard -- \
    "${dirs[@]/%//*.cpp}" "${dirs[@]/%//*.hpp}" | sort -zu)
else
  for d in "${dirs[@]}"; do
    [[ -d $top/$d ]] || continue
    while IFS= read -r -d '' f; do files+=("$f"); done < <(find "$top/$d" \( -name build -o -name 'build-*' \) -prune -o \
      -type f \( -name '*.cpp' -o -name '*.hpp' \) -print0 | sort -z)
  done
fi
if ((${#files[@]} == 0)); then
  echo "format.sh: no C++ sources under $top"
  echo "0 passed, 1 failed"
  exit 1
fi
# One run for all files; each violation is reported as FILE:LINE:COL: error: ...
status=0
out=$("$clang_format" --style=file --dry-run --Werror "${files[@]}" 2>&1) || status=$?
declare -A failed=()
while IFS= read -r line; do
  [[ $line == *": error: code should be clang-formatted"* ]] && failed[${line%%:[0-9]*:[0-9]*: error: *}]=1
done <<<"$out"
if ((status != 0 && ${#failed[@]} == 0)); then
  echo "format.sh: $clang_format failed (exit $status):"
  echo "$out" | head -20
  echo "0 passed, 1 failed"
  exit 1
fi
bad=()
for f in "${files[@]}"; do
  [[ -n ${failed[$f]:-} ]] && bad+=("${f#"$top"/}")
done
if ((${#bad[@]} > 0)); then
  echo "not formatted as .clang-format says ($("$clang_format" --version)):"
  printf '  %s\n' "${bad[@]}"
  echo "fix with: clang-format -i FILE..."
  echo "$((${#files[@]} - ${#bad[@]})) passed, ${#bad[@]} failed"
  exit 1
fi
echo "${#files[@]} passed, 0 failed"
