#!/usr/bin/env bash
# teardown.sh : stop every process setup.sh recorded (by its PID), delete the namespaces.
source "$(dirname "$0")/env.sh"
[[ -f $PFX_FILE ]] || { echo "nothing set up in $W"; exit 0; }
for f in "$W"/pids/*; do [[ -e $f ]] && stop_bg "$(basename "$f")"; done
for ns in "$NS_C" "$NS_G" "$NS_S"; do ip netns del "$ns" 2>/dev/null; done
rm -f "$PFX_FILE"
log "torn down $PFX"
