#!/usr/bin/env bash
# The folders are layers: each may include only its own headers and those of the layers
# it stands on, below. This table is the layering (docs/architecture.md draws it); an
# include that is not in it fails the test, naming file, line and the include.
set -euo pipefail
top=${1:?source directory}

declare -A stands_on=(
  [base]=""
  [policy]="base"
  [record]="attribution policy base"
  [certs]="base"
  [attribution]="base"
  [dns]="attribution record policy base"
  [proxy]="dns certs attribution record policy base"
  [control]="base"
  [daemon]="proxy dns certs attribution record control policy base"
  [launcher]="control policy base"
  [evidence]="record policy base"
  [app]="daemon launcher evidence proxy dns certs attribution record control policy base"
)

failed=0
checked=0
for layer in "${!stands_on[@]}"; do
  [[ -d $top/$layer ]] || { echo "$layer/: a layer of the table has no folder"; failed=1; continue; }
  allowed=" $layer ${stands_on[$layer]} "
  while IFS=: read -r file line text; do
    checked=$((checked + 1))
    target=${text#*\"}
    target=${target%%/*}
    if [[ $allowed != *" $target "* ]]; then
      echo "${file#"$top"/}:$line: $layer/ may not include $target/ ($text)"
      failed=1
    fi
  done < <(grep -rn --include='*.cpp' --include='*.hpp' -E '^#include "[a-z_]+/' "$top/$layer" || true)
done

# A folder of C++ that the table does not know is a layer nobody placed.
for dir in "$top"/*/; do
  name=$(basename "$dir")
  case $name in build|tests|bench|deploy|docs|cmake) continue ;; esac
  if [[ -z ${stands_on[$name]+set} ]] && compgen -G "$dir*.[ch]pp" >/dev/null; then
    echo "$name/: C++ in a folder that is not a layer; add it to the table in $0"
    failed=1
  fi
done

if ((failed)); then
  echo "0 passed, 1 failed"
  exit 1
fi
echo "1 passed, 0 failed ($checked includes across ${#stands_on[@]} layers)"
