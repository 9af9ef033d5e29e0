#!/usr/bin/env bash
# co_spawn(..., detached) swallows an escaping exception, so no server code may use it;
# base/spawn.hpp's spawn_session is the one way to start a connection or query coroutine.
set -euo pipefail
top=${1:?source directory}
# The completion token, not the word: "detached" is also English (a detached namespace).
hits=$(grep -rn --include='*.cpp' --include='*.hpp' -E '(asio::detached|,[[:space:]]*detached[[:space:]]*\))' \
  "$top/app" "$top/base" "$top/record" "$top/daemon" "$top/control" "$top/dns" "$top/policy" "$top/proxy" \
  "$top/certs" "$top/launcher" "$top/attribution" "$top/evidence" |
  grep -v 'base/spawn.hpp' || true)
if [[ -n $hits ]]; then
  echo "use base::spawn_session instead of detached:"
  echo "$hits"
  echo "0 passed, 1 failed"
  exit 1
fi
echo "1 passed, 0 failed"
