#!/usr/bin/env bash
# airlock as the candidate of an external comparison harness: one that starts a candidate
# command inside its gateway namespace with its ports, allowlist and upstream DNS filled in,
# redirects the client's :443 and :80 to it (nft REDIRECT, or TPROXY), and measures it beside
# HAProxy and nginx (bench/README.md, "Measured by another harness"). This renders airlock's
# config from those facts and runs the daemon in the foreground.
#
#   airlock.sh TLS_PORT HTTP_PORT DNS_ADDR DNS_PORT UPSTREAM_DNS_IP ALLOW_FILE WORKDIR [redirect|tproxy]
#
# ALLOW_FILE: one domain per line, meaning the domain and its subdomains. The client and the
# origin are the harness's 198.18.1.0/24 and 198.18.2.0/24 (the benchmarking range, special to
# airlock, so the origin's /24 is allowed by a cidr rule on 80 and 443: names are still judged).
# AIRLOCK=PATH picks the binary (default: build/release of this checkout).
set -euo pipefail
tls=$1 http=$2 dns_addr=$3 dns_port=$4 upstream=$5 allow=$6 dir=$7 mode=${8:-redirect}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
airlock=${AIRLOCK:-$here/../../build/release/app/airlock}
[[ -x $airlock ]] || { echo "airlock.sh: no airlock at $airlock (set AIRLOCK=)" >&2; exit 1; }
case $mode in
  redirect) listeners="proxy: [0.0.0.0:$tls, 0.0.0.0:$http]" ;;
  tproxy) listeners="tproxy: [0.0.0.0:$tls, 0.0.0.0:$http]" ;;
  *) echo "airlock.sh: mode is redirect or tproxy, not '$mode'" >&2; exit 2 ;;
esac
mkdir -p "$dir"
{
  cat <<YAML
version: 1
listen:
  $listeners
  dns: $dns_addr:$dns_port
upstream_dns: [$upstream]
log:
  decisions: $dir/airlock-decisions.jsonl
dns:
  # One session stands for a whole load generator: the per-session query rate would measure
  # itself.
  queries_per_second: 100000000
  burst: 100000000
limits:
  # The harness's clients are one session: its shares of the daemon's caps would cap the rows.
  session_connections: 0
  session_pending_handshakes: 0
policies:
  harness:
    allow:
      - cidr: 198.18.2.0/24
        ports: [80, 443]
YAML
  sed 's/^\(.*\)$/      - host: \1\n      - host: "*.\1"/' "$allow"
  cat <<YAML
sessions:
  - id: harness-client
    source: 198.18.1.0/24
    policy: harness
YAML
} >"$dir/airlock.yaml"
exec "$airlock" daemon -c "$dir/airlock.yaml"
