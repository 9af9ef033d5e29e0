#!/usr/bin/env bash
# threads: auto under a CPU quota (README.md, "Threads"): airlock started in a cgroup whose
# quota is one CPU runs one event loop, says why, and serves; started the same way outside
# it, one loop per CPU. The cgroup is v2's cpu.max where the host's v2 hierarchy has the cpu
# controller, else v1's cpu.cfs_quota_us. airlock enters the gateway's namespace with
# nsenter: `ip netns exec` remounts /sys, which would hide the cgroup files from it.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
WORLD_RECORDS="listed.airlock.test 203.0.113.10"
WORLD_CERT_NAMES="listed.airlock.test"
source "$here/lib/world.sh"
source "$here/lib/check.sh"

# The host's cgroup settings are left as they are: v2 only where the root already hands the
# cpu controller to its children.
if grep -qw cpu /sys/fs/cgroup/cgroup.subtree_control 2>/dev/null && [[ -w /sys/fs/cgroup ]]; then
  CG=/sys/fs/cgroup/e2e-cpu-quota-$$
elif [[ -w /sys/fs/cgroup/cpu/cgroup.procs ]]; then
  CG=/sys/fs/cgroup/cpu/e2e-cpu-quota-$$
else
  echo "SKIP: no writable cgroup hierarchy with the cpu controller"
  exit 77
fi
world_up
trap 'world_down; rmdir "$CG" 2>/dev/null || true' EXIT  # after the daemon has left it
mkdir "$CG"
if [[ -e $CG/cpu.max ]]; then
  echo "100000 100000" >"$CG/cpu.max"
else
  echo 100000 >"$CG/cpu.cfs_period_us"
  echo 100000 >"$CG/cpu.cfs_quota_us"
fi
world_airlock_config quota-sandbox <<<'      - host: listed.airlock.test'
cpus=$(nproc)

# start_in CGROUP: airlock in the gateway's namespace, moved into CGROUP first ("" for none).
start_in() {
  world_stop_airlock
  : >"$W/airlock.stderr"
  bash -c '[[ -z $1 ]] || echo $$ >"$1/cgroup.procs"; exec nsenter --net=/run/netns/"$2" "$3" daemon -c "$4"' \
    _ "$1" "$GW" "$AIRLOCK" "$W/airlock.yaml" 2>"$W/airlock.stderr" &
  world_await_airlock $!
}
fetch() { sbx_curl --resolve "listed.airlock.test:443:$ORIGIN_IP" https://listed.airlock.test/; }

start_in "$CG"
expect "in a cgroup with a quota of one CPU, airlock runs one loop" grep -q 'airlock: ready:.* threads=1$' "$W/airlock.stderr"
if ((cpus > 1)); then
  expect "  and says why ($cpus CPUs)" \
    grep -qF "threads: auto: 1, for the cgroup's CPU quota of 1.00 (of $cpus CPUs)" "$W/airlock.stderr"
else
  skip "  and says why" "one CPU here: a quota of one CPU changes nothing to say"
fi
expect "  and serves" body_is "origin says hello to listed.airlock.test" fetch

start_in ""
expect "started the same way outside it, one loop per CPU ($cpus)" grep -q "airlock: ready:.* threads=$cpus\$" "$W/airlock.stderr"
expect_not "  with nothing said of a quota" grep -q "CPU quota" "$W/airlock.stderr"
check_summary
