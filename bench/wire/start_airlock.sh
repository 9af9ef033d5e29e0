#!/usr/bin/env bash
# start_airlock.sh : (re)start airlock ($AIRLOCK) in the gateway with the rendered config.
source "$(dirname "$0")/env.sh"
stop_bg airlock
: >"$W/logs/airlock.out"
start_bg airlock "$NS_G" "$AIRLOCK" daemon -c "$W/cfg/airlock.yaml"
for _ in $(seq 100); do grep -q 'airlock: ready' "$W/logs/airlock.out" 2>/dev/null && break; sleep 0.1; done
grep -q 'airlock: ready' "$W/logs/airlock.out" || { echo "airlock did not start"; tail "$W/logs/airlock.out"; exit 1; } >&2
grep 'airlock: ready' "$W/logs/airlock.out"
