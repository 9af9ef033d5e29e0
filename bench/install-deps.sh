#!/usr/bin/env bash
# Installs the Debian 12 packages that bench/run and bench/wire need and nothing else: the proxies and
# resolvers airlock is measured against, the load generators, and the authoritative DNS
# server, on top of deploy/install-deps.sh's (which bench/run also needs, for building
# airlock and the origin nginx). CI never runs benches. Safe to run again.
# Services that the packages would start (haproxy, squid, unbound, nsd, dnsdist, nginx)
# are kept stopped: bench/run starts its own instances inside its namespaces.
set -euo pipefail

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
  # bench/wire: captures, system calls and kernel events per connection
  tcpdump strace linux-perf
)

# The same installer as the build's, with these on top: one place keeps services from
# starting on the host.
exec "$(dirname "$0")/../deploy/install-deps.sh" "${packages[@]}"
