#!/usr/bin/env bash
# Builds airlock's container image from Debian packages alone, with no registry: a minimal
# Debian 12 root (debootstrap --variant=minbase) with the airlock package and nftables (the
# sidecar's init container loads its table with nft), run as uid 1337, imported with podman.
#
#   deploy/image/build-image.sh airlock_0.1.0_amd64.deb [TAG] [MIRROR]
#
# TAG defaults to localhost/airlock:VERSION; MIRROR to the first Debian mirror apt uses here.
# Needs root, debootstrap and podman. For tests/package/service_test.sh, which boots systemd
# in the image: AIRLOCK_IMAGE_EXTRA names more packages, AIRLOCK_IMAGE_INIT=1 makes the
# image start /sbin/init as root instead of airlock as uid 1337.
set -euo pipefail
deb=${1:?usage: build-image.sh AIRLOCK.deb [TAG] [MIRROR]}
version=$(dpkg-deb -f "$deb" Version)
tag=${2:-localhost/airlock:$version}
mirror=${3:-$(sed -n 's/^URIs: *\([^ ]*\).*/\1/p' /etc/apt/sources.list.d/*.sources 2>/dev/null | grep -v security | head -1)}
mirror=${mirror:-http://deb.debian.org/debian}
uid=1337
# debootstrap does not read apt's configuration: the proxy apt uses here, if any, is passed on.
proxy=$(apt-config dump 2>/dev/null | sed -n 's/^Acquire::http::Proxy "\(.*\)";$/\1/p' | head -1)
[[ -z $proxy || -n ${http_proxy:-} ]] || export http_proxy=$proxy

root=$(mktemp -d /tmp/airlock-image.XXXXXX)
trap 'umount -R "$root/proc" 2>/dev/null || true; rm -rf "$root"' EXIT
debootstrap --variant=minbase bookworm "$root" "$mirror" >"$root.log" 2>&1 || {
  tail -20 "$root.log" >&2
  exit 1
}
rm -f "$root.log"
cp "$deb" "$root/tmp/airlock.deb"
mount -t proc proc "$root/proc"
chroot "$root" /bin/sh -eu -c "
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends /tmp/airlock.deb nftables ${AIRLOCK_IMAGE_EXTRA:-} >/dev/null
  getent group airlock >/dev/null || groupadd --system --gid $uid airlock
  useradd --system --uid $uid --gid airlock --home-dir /nonexistent --no-create-home --shell /usr/sbin/nologin airlock
  install -d -o $uid -g airlock -m 0750 /run/airlock /var/log/airlock /var/lib/airlock
  apt-get clean
  rm -rf /var/lib/apt/lists/* /tmp/airlock.deb /var/cache/debconf/*-old /var/log/apt /var/log/dpkg.log
"
umount "$root/proc"
# uid 1337 in the image is airlock, not root; a sidecar's init container runs as root with
# NET_ADMIN only to load the table (deploy/kubernetes/).
changes=(--change "USER $uid" --change 'ENTRYPOINT ["/usr/bin/airlock"]'
  --change 'CMD ["daemon", "-c", "/etc/airlock/policy.yaml"]' --change 'EXPOSE 9901')
[[ ${AIRLOCK_IMAGE_INIT:-} != 1 ]] || changes=(--change 'CMD ["/sbin/init"]')
tar -C "$root" --numeric-owner -cf - . |
  podman import "${changes[@]}" --message "airlock $version from Debian packages" - "$tag" >/dev/null
echo "$tag"
