# shellcheck shell=bash
# The startup scenario: what `airlock run -- true` adds to the wall time of `true` (issue 9:
# at most 30 ms with a daemon running, 100 ms with the embedded daemon), beside the floors
# (the airlock binary's own start, bubblewrap alone, a network namespace added and deleted
# with ip), then STARTUP_LOOP sandboxes in a row and what they leave behind.
#
# In a gateway namespace of its own ($PFX-l: the proxies' gateway forwards and has their
# tables), with a daemon in it and the sandboxes' addresses from 198.18.0.0/15 inside it
# only; the launcher's records go to a state directory in the scratch folder, so this
# never meets the machine's other sandboxes' records. Sourced by bench/run.

NS_L=$PFX-l
STARTUP_DIR=$WORK/startup
# `sudo bench/run` measures root's runs, as the published figures are: under sudo, airlock
# run would drop CMD to the sudo caller (one more setresuid, and bubblewrap in a user
# namespace), another figure.
unset SUDO_UID SUDO_GID SUDO_USER SUDO_COMMAND

# startup_names : the machine-wide things `airlock run` makes, one name a line: netns pins
# and cgroups (named after the sandbox, so other airlock runs on the machine show too)
startup_names() {
  find /run/netns -maxdepth 1 -name 'airlock-*' 2>/dev/null
  find /sys/fs/cgroup/*/airlock /sys/fs/cgroup/airlock -mindepth 1 -maxdepth 1 -type d 2>/dev/null
  find /sys/fs/cgroup -maxdepth 5 -type d -name 'airlock-*' 2>/dev/null
}
# startup_local : "veth nft state" counts of what only this scenario's runs can make
startup_local() {
  local veth nft state
  veth=$(ip -n "$NS_L" -o link show 2>/dev/null | grep -c ': airlock[0-9a-f]\{8\}[@:]')
  nft=$(inns "$NS_L" nft list tables 2>/dev/null | grep -c 'airlock_[0-9a-f]\{8\}$')
  state=$(find "$STARTUP_DIR/state" -name '*.state' 2>/dev/null | wc -l)
  echo "$veth $nft $state"
}

startup_down() {
  [[ -d $STARTUP_DIR ]] || return 0
  stop_bg startup-daemon
  # An interrupted run may have left a sandbox: its record is in our state directory.
  [[ -d $STARTUP_DIR/state ]] && nsenter --net="/run/netns/$NS_L" "$AIRLOCK" gc --state-dir "$STARTUP_DIR/state" >/dev/null 2>&1
  ip netns del "$NS_L-x" 2>/dev/null
  ip netns del "$NS_L" 2>/dev/null
  rm -rf "$STARTUP_DIR"
}

scenario_startup() {
  local d=$STARTUP_DIR
  if ! command -v bwrap >/dev/null || ! command -v nsenter >/dev/null; then
    warn "startup: needs bwrap and nsenter (deploy/install-deps.sh)"
    return
  fi
  mkdir -p "$d/proj" "$d/state"
  ip netns add "$NS_L" || { warn "startup: cannot make $NS_L"; return; }
  ip -n "$NS_L" link set lo up
  cat >"$d/daemon.yaml" <<YAML
version: 1
listen:
  proxy: 0.0.0.0:15001
  dns: 0.0.0.0:15053
  control: $d/control.sock
upstream_dns: [127.0.0.1]
log:
  decisions: $d/decisions.jsonl
policies:
  closed:
    allow:
      - host: nothing.albench
default_policy: closed
YAML
  cat >"$d/embedded.yaml" <<YAML
version: 1
upstream_dns: [127.0.0.1]
log:
  decisions: $d/embedded.jsonl
policies:
  closed:
    allow:
      - host: nothing.albench
default_policy: closed
YAML
  start_bg startup-daemon "$NS_L" "$AIRLOCK" daemon -c "$d/daemon.yaml"
  for _ in $(seq 100); do [[ -S $d/control.sock ]] && break; sleep 0.05; done
  [[ -S $d/control.sock ]] || { warn "startup: the daemon did not start: $(tail -3 "$WORK/logs/startup-daemon.out")"; startup_down; return; }

  # Timed rounds and the AIRLOCK_TIMINGS breakdown (from a project directory: airlock run
  # refuses to share $HOME).
  log "startup: $STARTUP_ROUNDS interleaved rounds of true, airlock --version, bwrap, ip netns add+del, airlock run (daemon, embedded)"
  pushd "$d/proj" >/dev/null || return
  bounded 900 python3 "$HERE/lib/startup.py" "$NS_L" "$AIRLOCK" "$d" "$STARTUP_ROUNDS" 3 "$STARTUP_TIMINGS" 600 \
    >>"$RESULTS/raw.tsv" 2>"$WORK/logs/startup.err" ||
    warn "startup: a timed command failed: $(tail -5 "$WORK/logs/startup.err")"
  log "startup: medians $(python3 -c '
import csv, statistics, sys
v = {}
for r in csv.reader(open(sys.argv[1]), delimiter="\t"):
    if r[0] == "startup" and r[2] == "ms":
        v.setdefault(r[1], []).append(float(r[4]))
print("; ".join(f"{t} {statistics.median(x):.1f} ms" for t, x in v.items()))' "$RESULTS/raw.tsv")"

  # STARTUP_LOOP runs in a row, with --pids 64 so that cgroups are made and removed too.
  # The timed runs' veths go with their namespaces, in the background: count once they have.
  local before_names before_local after_names after_local i failed=0 ok=0 t0 new took_s bv bn bs av an as
  for _ in $(seq 50); do [[ $(startup_local) == "0 0 0" ]] && break; sleep 0.1; done
  before_names=$(startup_names | sort) before_local=$(startup_local)
  log "startup: $STARTUP_LOOP runs of airlock run --pids 64 -- true in a row (at most 600 s)"
  t0=$EPOCHREALTIME
  local start_s=$SECONDS
  for ((i = 1; i <= STARTUP_LOOP; i++)); do
    if timeout 30 nsenter --net="/run/netns/$NS_L" "$AIRLOCK" run --state-dir "$d/state" \
      --control "$d/control.sock" --pids 64 -- true 2>>"$WORK/logs/startup-loop.err"; then
      ok=$((ok + 1))
    else
      failed=$((failed + 1))
    fi
    ((SECONDS - start_s < 600)) || { warn "startup: loop stopped after $i runs (600 s)"; break; }
  done
  popd >/dev/null || true
  took_s=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.2f", b - a }')
  # The last sandbox's veth goes when the kernel has destroyed its namespace: give it 5 s.
  for _ in $(seq 50); do
    after_local=$(startup_local) after_names=$(startup_names | sort)
    [[ $after_local == "$before_local" && $after_names == "$before_names" ]] && break
    sleep 0.1
  done
  new=$(comm -13 <(echo "$before_names") <(echo "$after_names") | grep -c .)
  read -r bv bn bs <<<"$before_local"
  read -r av an as <<<"$after_local"
  emit startup-loop daemon runs 1 "$ok" count
  emit startup-loop daemon failed 1 "$failed" count
  emit startup-loop daemon seconds 1 "$took_s" s
  emit startup-loop daemon left_veth 1 $((av - bv)) count
  emit startup-loop daemon left_nft 1 $((an - bn)) count
  emit startup-loop daemon left_records 1 $((as - bs)) count
  emit startup-loop daemon left_netns_or_cgroup 1 "$new" count
  [[ $new -eq 0 ]] || warn "startup: new since the loop began (ours, or another airlock's running on this machine):
$(comm -13 <(echo "$before_names") <(echo "$after_names"))"
  log "startup: $ok runs ok, $failed failed in $took_s s; left: veth $((av - bv)), nft $((an - bn)), records $((as - bs)), netns pins or cgroups $new"
  startup_down
}
