#!/usr/bin/env python3
"""startup.py NS AIRLOCK DIR ROUNDS WARMUP TIMINGS_N DEADLINE_S

The timed part of the startup scenario (bench/lib/startup.sh prepares NS, a namespace with
a daemon whose control socket is DIR/control.sock, and DIR/embedded.yaml). Prints raw.tsv
rows on stdout:

- startup TARGET ms ROUND VALUE: the wall time of one command, started from here (fork +
  exec + wait, the same for every command, so it cancels out of the differences). ROUNDS
  interleaved rounds run every command once each, in an order rotated every round, so a
  machine whose load drifts (others compiling) meets every command alike; report.py takes
  the difference to `true` within each round and the median of those.
- startup-steps daemon STEP ROUND VALUE: AIRLOCK_TIMINGS=1's breakdown of TIMINGS_N runs
  with the daemon.
- startup-load all busy_pct|loadavg_start|loadavg_end 1 VALUE: the machine while the
  rounds ran (busy includes this benchmark's own processes).

Stops with status 1 at the first command that fails (a failed run has no meaningful time),
and stops early (keeping the rounds done) once DEADLINE_S seconds have passed.
"""
import os
import re
import subprocess
import sys
import time

ns, airlock, d, rounds, warmup, timings_n, deadline_s = sys.argv[1:8]
rounds, warmup, timings_n, deadline_s = int(rounds), int(warmup), int(timings_n), float(deadline_s)
in_ns = ["nsenter", f"--net=/run/netns/{ns}"]
control = os.path.join(d, "control.sock")

# name -> list of argv run one after the other (the netns floor is two commands)
COMMANDS = {
    "true": [in_ns + ["true"]],
    "airlock --version": [in_ns + [airlock, "--version"]],
    "bwrap": [in_ns + ["bwrap", "--ro-bind", "/", "/", "--unshare-pid", "--die-with-parent", "true"]],
    "netns": [["ip", "netns", "add", f"{ns}-x"], ["ip", "netns", "del", f"{ns}-x"]],
    "daemon": [in_ns + [airlock, "run", "--state-dir", os.path.join(d, "state"), "--control", control, "--", "true"]],
    "embedded": [in_ns + [airlock, "run", "--state-dir", os.path.join(d, "state"), "--control",
                          os.path.join(d, "none.sock"), "-c", os.path.join(d, "embedded.yaml"), "--", "true"]],
}


def run(argvs, env=None):
    """wall ms of the commands in a row; stderr of the last one"""
    t = time.perf_counter()
    for argv in argvs:
        p = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                           timeout=30, env=env)
        if p.returncode != 0:
            sys.stderr.write(f"startup.py: {' '.join(argv)} failed ({p.returncode}):\n{p.stderr.decode(errors='replace')}")
            sys.exit(1)
    return (time.perf_counter() - t) * 1000, p.stderr.decode(errors="replace")


def busy():
    f = open("/proc/stat").readline().split()[1:]
    v = [int(x) for x in f]
    b = v[0] + v[1] + v[2] + v[5] + v[6] + v[7]
    return b, b + v[3] + v[4]


def loadavg():
    return float(open("/proc/loadavg").read().split()[0])


def row(scenario, target, metric, rnd, value, unit):
    print(f"{scenario}\t{target}\t{metric}\t{rnd}\t{value:.3f}\t{unit}", flush=True)


started = time.monotonic()
names = list(COMMANDS)
for i in range(warmup):
    for n in names:
        run(COMMANDS[n])
la0, (b0, t0) = loadavg(), busy()
done = 0
for r in range(1, rounds + 1):
    if time.monotonic() - started > deadline_s:
        sys.stderr.write(f"startup.py: stopped after {done} rounds ({deadline_s:.0f} s)\n")
        break
    k = r % len(names)
    for n in names[k:] + names[:k]:
        ms, _ = run(COMMANDS[n])
        row("startup", n, "ms", r, ms, "ms")
    done = r
b1, t1 = busy()
row("startup-load", "all", "busy_pct", 1, 100.0 * (b1 - b0) / max(1, t1 - t0), "%")
row("startup-load", "all", "loadavg_start", 1, la0, "")
row("startup-load", "all", "loadavg_end", 1, loadavg(), "")
row("startup-load", "all", "rounds", 1, done, "count")

# "airlock: timings: checks 0.12 ms, address 0.30 ms, netns+veth, daemon 2.70 ms, ..."
env = dict(os.environ, AIRLOCK_TIMINGS="1")
for r in range(1, timings_n + 1):
    if time.monotonic() - started > deadline_s:
        break
    _, err = run(COMMANDS["daemon"], env=env)
    line = next((l for l in err.splitlines() if l.startswith("airlock: timings:")), "")
    for step, ms in re.findall(r"\s*(.+?) (\d+\.\d+) ms,?", line[len("airlock: timings:"):]):
        row("startup-steps", "daemon", step.strip(), r, float(ms), "ms")
