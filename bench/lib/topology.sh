# shellcheck shell=bash
# Three namespaces of our own, nothing in the root namespace but /etc/netns/$PFX-*:
#
#   $PFX-c 198.18.1.2 --veth-- 198.18.1.1 $PFX-g 198.18.2.1 --veth-- 198.18.2.2 $PFX-s
#   client                     proxies, resolvers, nft            origin nginx, NSD
#
# Routes only between the two /24s; no default route anywhere, so nothing can leave the
# machine. The gateway forwards (the "direct" baseline is plain kernel forwarding); a
# target's nft table REDIRECTs (or TPROXYs) the client's :443 and :80 to its ports.

topo_down() {
  local ns
  for ns in "$NS_C" "$NS_G" "$NS_S"; do
    ip netns del "$ns" 2>/dev/null || true
    rm -rf "/etc/netns/$ns"
  done
}

topo_up() {
  local ns k
  for ns in "$NS_C" "$NS_G" "$NS_S"; do
    ip netns add "$ns" || return 1
    ip -n "$ns" link set lo up
    mkdir -p "/etc/netns/$ns"
  done
  ip link add "$IF_C" netns "$NS_C" type veth peer name "$IF_GC" netns "$NS_G" || return 1
  ip link add "$IF_GS" netns "$NS_G" type veth peer name "$IF_S" netns "$NS_S" || return 1
  ip -n "$NS_C" addr add "$IP_C/24" dev "$IF_C"
  ip -n "$NS_C" link set "$IF_C" up
  ip -n "$NS_C" route add "$NET_S" via "$IP_GC"
  ip -n "$NS_G" addr add "$IP_GC/24" dev "$IF_GC"
  ip -n "$NS_G" addr add "$IP_GS/24" dev "$IF_GS"
  ip -n "$NS_G" link set "$IF_GC" up
  ip -n "$NS_G" link set "$IF_GS" up
  ip -n "$NS_S" addr add "$IP_S/24" dev "$IF_S"
  ip -n "$NS_S" link set "$IF_S" up
  ip -n "$NS_S" route add "$NET_C" via "$IP_GS"
  for ns in "$NS_C" "$NS_G" "$NS_S"; do
    inns "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
  done

  inns "$NS_G" sysctl -qw net.ipv4.ip_forward=1
  # REDIRECT needs conntrack in the gateway. At thousands of short connections per second
  # the default 120 s for closed flows fills the table and later runs stall: 2 s instead.
  for k in time_wait close_wait fin_wait last_ack close; do
    inns "$NS_G" sysctl -qw "net.netfilter.nf_conntrack_tcp_timeout_$k=2" 2>/dev/null || true
  done
  # TPROXY (nginx): a transparent socket leaves TIME_WAIT entries carrying the origin's
  # address; with early demux a later *forwarded* SYN on that 4-tuple is matched to it and
  # dropped (the direct baseline stalls). Marked packets are delivered locally, and only
  # for the benchmark range.
  inns "$NS_G" sysctl -qw net.ipv4.ip_early_demux=0
  inns "$NS_G" ip rule add fwmark 1 lookup 100
  inns "$NS_G" ip route add local "$BENCH_NET" dev lo table 100
  for ns in "$NS_C" "$NS_G" "$NS_S"; do
    inns "$ns" sysctl -qw net.ipv4.ip_local_port_range="10000 64999" net.ipv4.tcp_tw_reuse=1 \
      net.core.somaxconn=16384 net.ipv4.tcp_max_syn_backlog=16384 net.ipv4.tcp_no_metrics_save=1
  done

  # What `ip netns exec` mounts over /etc: wrk and curl find the names here, while the
  # proxies and resolvers under test ask the authoritative server themselves.
  printf '127.0.0.1 localhost\n%s %s %s\n' "$IP_S" "$HOST_OK" "$HOST_BAD" >"/etc/netns/$NS_C/hosts"
  printf '127.0.0.1 localhost\n' >"/etc/netns/$NS_G/hosts"
  printf '127.0.0.1 localhost\n' >"/etc/netns/$NS_S/hosts"
  for ns in "$NS_C" "$NS_G"; do printf 'nameserver %s\n' "$IP_S" >"/etc/netns/$ns/resolv.conf"; done
  printf 'nameserver 127.0.0.1\n' >"/etc/netns/$NS_S/resolv.conf"
}

# ---- interception in the gateway -----------------------------------------------------
# nft_direct           : no table, plain forwarding (the baseline)
# nft_redirect T H [R] : client TCP :443 -> local port T, :80 -> H, and :$PORT_RAW (opaque
#                        TCP) -> R when R is given and not "-" (SO_ORIGINAL_DST)
# nft_tproxy T H [R]   : the same with TPROXY (getsockname() = original destination)
nft_direct() { inns "$NS_G" nft delete table ip albench 2>/dev/null || true; }

nft_redirect() {
  local raw=""
  [[ -n ${3:-} && $3 != - ]] && raw="iifname \"$IF_GC\" tcp dport $PORT_RAW redirect to :$3"
  nft_direct
  inns "$NS_G" nft -f - <<EOF2
table ip albench {
  chain pre {
    type nat hook prerouting priority dstnat; policy accept;
    iifname "$IF_GC" tcp dport 443 redirect to :$1
    iifname "$IF_GC" tcp dport 80 redirect to :$2
    $raw
  }
}
EOF2
}

nft_tproxy() {
  local raw=""
  [[ -n ${3:-} && $3 != - ]] && raw="iifname \"$IF_GC\" tcp dport $PORT_RAW tproxy to :$3 meta mark set 1 accept"
  nft_direct
  inns "$NS_G" nft -f - <<EOF2
table ip albench {
  chain pre {
    type filter hook prerouting priority mangle; policy accept;
    iifname "$IF_GC" tcp dport 443 tproxy to :$1 meta mark set 1 accept
    iifname "$IF_GC" tcp dport 80 tproxy to :$2 meta mark set 1 accept
    $raw
  }
}
EOF2
}

# Stale REDIRECT entries keep their NAT binding in conntrack: a client reusing a source
# port would be steered to the previous target. Flush on every switch.
ct_flush() {
  if command -v conntrack >/dev/null; then
    inns "$NS_G" conntrack -F 2>/dev/null || warn "conntrack flush failed"
  else
    inns "$NS_G" python3 "$HERE/lib/ctflush.py" || warn "conntrack flush failed"
  fi
}
