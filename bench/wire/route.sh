#!/usr/bin/env bash
# route.sh TARGET : the gateway's nft table for TARGET (bench/lib/topology.sh's
# nft_direct / nft_redirect / nft_tproxy, :443 only), then a conntrack flush.
source "$(dirname "$0")/env.sh"
t=$1
inns "$NS_G" nft delete table ip ws 2>/dev/null
rule() {
  case $1 in
    redirect) echo "type nat hook prerouting priority dstnat; policy accept; iifname \"$IF_GC\" tcp dport 443 redirect to :$2" ;;
    tproxy) echo "type filter hook prerouting priority mangle; policy accept; iifname \"$IF_GC\" tcp dport 443 tproxy to :$2 meta mark set 1 accept" ;;
  esac
}
case $t in
  direct) r="" ;;
  airlock) r=$(rule redirect $PORT_AIRLOCK_TLS) ;;
  airlock-tproxy) r=$(rule tproxy $PORT_AIRLOCK_TP) ;;
  haproxy) r=$(rule redirect $PORT_HAPROXY_TLS) ;;
  nginx) r=$(rule tproxy $PORT_NGINX_TLS) ;;
  floor) r=$(rule tproxy $PORT_FLOOR) ;;
  *) echo "unknown target $t" >&2; exit 1 ;;
esac
if [[ -n $r ]]; then
  printf 'table ip ws {\n  chain pre {\n    %s\n  }\n}\n' "$(echo "$r" | sed 's/; /;\n    /g')" | inns "$NS_G" nft -f - || exit 1
fi
inns "$NS_G" conntrack -F 2>/dev/null || inns "$NS_G" python3 "$BENCH_LIB/ctflush.py"
