#!/usr/bin/env bash
# Installs the Debian 12 packages that bench/run needs and nothing else: the proxies and
# resolvers airlock is measured against, the load generators, and the authoritative DNS
# server. CI never runs benches, so this is apart from deploy/install-deps.sh (which
# bench/run also needs, for building airlock and the origin nginx). Safe to run again.
# Services that the packages would start (haproxy, squid, unbound, nsd, dnsdist, nginx)
# are kept stopped: bench/run starts its own instances inside its namespaces.
set -euo pipefail

if [[ $(id -u) -ne 0 ]]; then
  echo "install-deps.sh: run as root (it calls apt-get)" >&2
  exit 1
fi

packages=(
  # the alternatives: SNI/Host filtering proxies
  haproxy libnginx-mod-stream squid-openssl
  # the alternatives: filtering resolvers, and the authoritative server they all ask
  unbound dnsmasq-base dnsdist nsd
  # load generators and probes
  wrk dnsperf curl bind9-dnsutils openssl
  # namespaces, interception, accounting
  iproute2 nftables conntrack time util-linux procps python3
  # the C++ load generator (bench/loadgen) and the decide() microbenchmark
  libboost1.81-dev libssl-dev libbenchmark-dev
)

export DEBIAN_FRONTEND=noninteractive
# Keep maintainer scripts from starting daemons on the host.
policy_rc=/usr/sbin/policy-rc.d
created_policy_rc=0
if [[ ! -e $policy_rc ]]; then
  printf '#!/bin/sh\nexit 101\n' >"$policy_rc"
  chmod 755 "$policy_rc"
  created_policy_rc=1
fi
cleanup() { if [[ $created_policy_rc == 1 ]]; then rm -f "$policy_rc"; fi; }
trap cleanup EXIT

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if ((${#missing[@]})); then
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
echo "bench/install-deps.sh: all ${#packages[@]} packages present"
