#!/usr/bin/env bash
# teardown.sh : stop every process setup.sh recorded (by its PID), delete the namespaces.
source "$(dirname "$0")/env.sh"
[[ -f $PFX_FILE ]] || { echo "nothing set up in $W"; exit 0; }
for f in "$W"/pids/*; do [[ -e $f ]] && stop_bg "$(basename "$f")"; done
source "$REPO/bench/lib/topology.sh"
topo_down  # the namespaces and their /etc/netns entries
rm -f "$PFX_FILE"
log "torn down $PFX"
