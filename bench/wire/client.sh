#!/usr/bin/env bash
# client.sh N [PARALLEL] : N HTTPS requests from the client namespace to
# https://www.ok.albench/small.html (1 KiB), one new TLS 1.3 connection each
# (Connection: close), sequential unless PARALLEL > 1 (curl --parallel). One curl process.
# CLIENT_WRAP: a command put before curl (perfcount.sh: perf stat ... --).
# Prints a tally of "http_code num_connects ssl_verify_result" lines. Bounded by timeout.
source "$(dirname "$0")/env.sh"
n=${1:-1} par=${2:-1}
cfg=$(mktemp "$W/tmp/curlcfg.XXXXXX")
for ((i = 0; i < n; i++)); do printf 'url = "https://%s/small.html"\noutput = "/dev/null"\n' "$HOST_OK"; done >"$cfg"
extra=()
((par > 1)) && extra=(--parallel --parallel-max "$par")
timeout $((30 + n / 2)) ip netns exec "$NS_C" ${CLIENT_WRAP:-} curl -sS --no-progress-meter --tlsv1.3 --cacert "$W/pki/ca.pem" \
  --resolve "$HOST_OK:443:$IP_S" -H 'Connection: close' -w '%{http_code} %{num_connects} %{ssl_verify_result}\n' \
  "${extra[@]}" -K "$cfg" | sort | uniq -c
rm -f "$cfg"
