#!/usr/bin/env bash
# The container image and the Kubernetes sidecar, for real: deploy/image/build-image.sh makes
# the image from the package (debootstrap, no registry), and `podman kube play` runs
# deploy/kubernetes/sidecar-pod.yaml (with this test's image tag, and its policy allowing
# allowed.airlock.test with the world's resolver as upstream). The pod gets no network from
# podman (--network none); the test gives it one veth to the world's "internet" namespace,
# where unbound and nginx stand in for the origin and the attacker. Checked: the init
# container loaded the sidecar table; airlock runs as uid 1337 and answers /healthz; the
# workload container's request to an allowed name is answered, a denied name is not resolved
# and a hard-coded address is refused, each with its line in airlock's log (kubectl logs'
# view: podman logs), and the attacker's nginx saw nothing. The other manifests render with
# `kubectl kustomize` where kubectl exists, and their policies pass `airlock check`.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
: "${AIRLOCK_PACKAGE_OUT:?set AIRLOCK_PACKAGE_OUT to where tests/package/deb_test.sh put the package}"
deb=$(ls "$AIRLOCK_PACKAGE_OUT"/airlock_*.deb 2>/dev/null | head -1 || true)
[[ -n $deb ]] || { echo "no package in $AIRLOCK_PACKAGE_OUT (package.deb makes it)"; exit 77; }
for tool in debootstrap podman catatonit; do
  command -v "$tool" >/dev/null || { echo "missing $tool: run deploy/install-deps.sh"; exit 77; }
done

WORLD_RECORDS="allowed.airlock.test 203.0.113.10
denied.airlock.test 203.0.113.66"
WORLD_CERT_NAMES="allowed.airlock.test denied.airlock.test"
source "$src/tests/e2e/lib/world.sh"
source "$src/tests/e2e/lib/check.sh"
world_up

tag=localhost/airlock-test:$P
pod=agent
# podman's defaults ask for more open files and processes than this machine's hard limits,
# and crun refuses a hybrid cgroup layout that runc accepts: a config of the test's own.
cat >"$W/containers.conf" <<CONF
[containers]
default_ulimits = ["nofile=4096:4096", "nproc=4096:4096"]
CONF
export CONTAINERS_CONF=$W/containers.conf
runtime=()
command -v runc >/dev/null && runtime=(--runtime runc)
pm() { podman "${runtime[@]}" "$@"; }
trap 'pm kube down "$W/pod.yaml" >/dev/null 2>&1 || true; podman rmi -f "$tag" >/dev/null 2>&1 || true; world_down' EXIT

start=$(date +%s)
if "$src/deploy/image/build-image.sh" "$deb" "$tag" >"$W/image.log" 2>&1; then
  pass "the image builds from the package alone ($(($(date +%s) - start)) s)"
else
  fail "the image builds from the package alone"
  sed 's/^/     /' "$W/image.log" | tail -20
  check_summary
  exit 1
fi
expect "  it runs as uid 1337 by default" bash -c "[[ \$(podman image inspect --format '{{.Config.User}}' '$tag') == 1337 ]]"
expect "  and its airlock answers --version" pm run --rm --network none "$tag" --version

# The manifest as shipped, but for this test's image, origin and resolver.
sed -e "s|localhost/airlock:0.1.0|$tag|" \
  -e "s|        include: \[github, npm, pypi\]|        allow:\n          - host: allowed.airlock.test|" \
  -e "s|^    log:|    upstream_dns: [$DNS_IP]\n    log:|" \
  -e "s|^    prometheus.io/path: /metrics|&\n    io.podman.annotations.init.container.type: always|" \
  "$src/deploy/kubernetes/sidecar-pod.yaml" >"$W/pod.yaml"
# (The annotation: podman 4.3 under runc races removing a run-once init container that has
# just exited, and fails the play; an "always" one is kept.)
expect "the test's manifest differs from the shipped one only in image, policy and resolver" \
  bash -c "diff '$src/deploy/kubernetes/sidecar-pod.yaml' '$W/pod.yaml' | grep '^[<>]' | grep -v -e 'image: ' -e 'include: ' -e 'allow:' -e 'host: allowed' -e 'upstream_dns' -e 'init.container.type' | grep -q . && exit 1 || true"
expect "podman kube play starts the sidecar pod" pm kube play --network none "$W/pod.yaml"
infra=$(podman pod inspect "$pod" --format '{{.InfraContainerID}}')
pid=$(podman inspect "$infra" --format '{{.State.Pid}}')
# The pod's one way to the world: a veth into the internet namespace.
ip link add "$P-p0" type veth peer name "$P-n1" netns "$NET"
ip link set "$P-p0" netns "$pid"
nsenter -t "$pid" -n ip addr add 198.18.50.2/30 dev "$P-p0"
nsenter -t "$pid" -n ip link set "$P-p0" up
nsenter -t "$pid" -n ip route add default via 198.18.50.1
ip -n "$NET" addr add 198.18.50.1/30 dev "$P-n1"
ip -n "$NET" link set "$P-n1" up

for _ in $(seq 100); do
  [[ $(podman inspect "$pod-airlock" --format '{{.State.Status}}' 2>/dev/null) == running ]] && break
  sleep 0.1
done
expect "the init container loaded the sidecar table into the pod's namespace" \
  bash -c "nsenter -t $pid -n nft list table inet airlock_sidecar | grep -q 'meta skuid 1337'"
expect "  and exited 0" bash -c "[[ \$(podman inspect '$pod-airlock-rules' --format '{{.State.ExitCode}}') == 0 ]]"
expect "airlock runs as uid 1337" bash -c "[[ \$(podman exec '$pod-airlock' /usr/bin/id -u) == 1337 ]]"
# Readiness, as the kubelet's probe asks it (the workload reaches loopback; the table leaves lo alone).
http_get() { # http_get CONTAINER HOST PORT PATH: the whole answer, with bash's /dev/tcp
  podman exec "$1" /bin/bash -c "exec 3<>/dev/tcp/$2/$3 && printf 'GET $4 HTTP/1.1\r\nHost: $2\r\nConnection: close\r\n\r\n' >&3 && timeout 10 cat <&3"
}
ready=0
for _ in $(seq 50); do http_get "$pod-workload" 127.0.0.1 9901 /healthz 2>/dev/null | grep -q '^HTTP/1.1 200' && ready=1 && break; sleep 0.2; done
expect "airlock answers /healthz on the admin port" test "$ready" -eq 1

expect "the workload's request to an allowed name is answered by the origin" \
  bash -c "http_get() { $(declare -f http_get | tail -n +2); }; http_get '$pod-workload' allowed.airlock.test 80 / | grep -q 'origin says hello to allowed.airlock.test'"
expect "the workload cannot resolve a denied name (getent: not found, status 2)" \
  bash -c "podman exec '$pod-workload' /usr/bin/getent hosts denied.airlock.test; [[ \$? -eq 2 ]]"
expect "the workload's request to a hard-coded address is refused by airlock (no_name)" \
  bash -c "http_get() { $(declare -f http_get | tail -n +2); }; http_get '$pod-workload' 203.0.113.66 80 / | grep -q '\"reason\":\"no_name\"'"
podman logs "$pod-airlock" 2>/dev/null | grep '^{' >"$W/decisions.jsonl" || true
expect "airlock's log (podman logs) has the allowed connection" \
  line event=connect name=allowed.airlock.test verdict=allow
expect "  the denied query" line event=dns name=denied.airlock.test verdict=deny
expect "  and the refused address" line event=connect dst=203.0.113.66:80 verdict=deny
expect "the attacker's server saw nothing" bash -c "[[ ! -s '$W/attacker-access.log' ]]"

# The rest of deploy/kubernetes: the policies inside pass airlock check, and the whole renders.
for f in "$src"/deploy/kubernetes/*.yaml; do
  [[ $(basename "$f") == kustomization.yaml ]] && continue
  sed -n '/^  policy.yaml: |$/,/^---$/p' "$f" | sed '1d;/^---$/d;s/^    //' >"$W/policy-$(basename "$f")"
  [[ -s $W/policy-$(basename "$f") ]] || continue
  expect "the policy in $(basename "$f") passes airlock check" \
    pm run --rm --network none --user 0 -v "$W:/w:ro" "$tag" check -c "/w/policy-$(basename "$f")"
done
if command -v kubectl >/dev/null; then
  expect "kubectl kustomize renders deploy/kubernetes (8 objects)" \
    bash -c "[[ \$(kubectl kustomize '$src/deploy/kubernetes' | grep -c '^kind:') -ge 8 ]]"
else
  skip "kubectl kustomize renders deploy/kubernetes (8 objects)" "no kubectl here (not a Debian 12 package)"
fi
check_summary
