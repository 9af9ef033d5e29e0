#!/usr/bin/env bash
# Installs exactly the Debian 12 packages that airlock's build, tests and demo use, plus
# any named as arguments (bench/install-deps.sh passes its own). Safe to run again.
# Services that the packages would start (unbound, nginx, ...) are kept stopped: the
# tests, the demo and the bench start their own instances inside namespaces.
set -euo pipefail

if [[ $(id -u) -ne 0 ]]; then
  echo "install-deps.sh: run as root (it calls apt-get)" >&2
  exit 1
fi

packages=(
  # build
  build-essential cmake ninja-build pkg-config
  libboost1.81-dev libboost-json1.81-dev
  libssl-dev libc-ares-dev libre2-dev libyaml-cpp-dev prometheus-cpp-dev libidn2-dev libnghttp2-dev
  doctest-dev
  # bench/ microbenchmarks
  libbenchmark-dev
  # fuzz targets (clang's libFuzzer)
  clang-14 libfuzzer-14-dev
  # the layout check (tests/lint/format.sh; .clang-format is tuned for version 14)
  clang-format
  # the launcher and the gateway rules
  nftables libnftables-dev iproute2 bubblewrap
  # test peers: real DNS server, real origin, real clients
  unbound nginx-light curl bind9-dnsutils openssl python3 procps
  # a terminal for the approver prompt's test (tests/e2e/approvals_test.sh)
  tmux
  # a WebSocket server and client (tests/e2e/websocket_test.sh)
  python3-websockets
  # HTTP/2 peers (tests/e2e/h2_test.sh): nghttp, Python's h2 and grpcio
  nghttp2-client python3-h2 python3-grpcio
  # a client TLS inspection is tested with (npm: below)
  git
  # the manual pages' check (groff reads each page); the sidecar test's users (setpriv)
  groff-base util-linux
  # the service files' check (systemd-analyze)
  systemd
  # the package and the image (tests/package/): build, lintian, debootstrap, podman
  debhelper lintian fakeroot debootstrap podman runc catatonit
  "$@"
)

# npm comes with Debian's nodejs as its own package, and inside NodeSource's nodejs; an
# npm already on PATH is used as it is (asking apt for Debian's would fight the other).
command -v npm >/dev/null || packages+=(npm)

export DEBIAN_FRONTEND=noninteractive
# Keep maintainer scripts from starting unbound/nginx on the host.
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
echo "install-deps.sh: all ${#packages[@]} packages present"
