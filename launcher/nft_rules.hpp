#pragma once
// airlock's nftables tables, as text for `nft -f -` (applied in one transaction, so never
// half-installed): the gateway's for one sandbox interface, and the sidecar's for a network
// namespace airlock shares with its workload. Pure: unit-tested on their text, used by
// `airlock nft-rules`, the demo and the end-to-end tests, and (the gateway's) by the launcher.
#include "base/result.hpp"

#include <cstdint>
#include <string>

namespace airlock::launcher {

struct gateway_rules {
  std::string iface;  // gateway-side interface of the sandbox's veth
  std::uint16_t proxy_port = 15001;
  std::uint16_t dns_port = 15053;
  std::string table;  // default: airlock_<iface>
  // TCP reaches airlock by TPROXY (its listen.tproxy socket, at proxy_port) instead of
  // REDIRECT: no NAT, the connection keeps its destination. Needs policy routing for
  // tproxy_mark, which the rendered text names in a comment.
  bool tproxy = false;
  // REDIRECT only; nonzero: TCP to :443 goes to this port (a second listen.proxy socket)
  // instead of proxy_port. One listener port for every destination port makes a client's
  // :80 and :443 connections share four-tuples after NAT, and a SYN that meets TIME_WAIT
  // of the other port, with its unrelated TCP timestamp, is dropped (PAWS) and resent
  // 10-20 ms later (bench/results/2026-12-03-connect-tail.md). The launcher (run and attach) sets it
  // to control::listener_ports::https: the daemon's second proxy port, 0 when it has one.
  std::uint16_t https_port = 0;
};

inline constexpr unsigned tproxy_mark = 0x1a1;

// The ruleset, or a message naming the bad field (interface or table names outside
// [A-Za-z0-9_.-] could smuggle nft syntax, so they are refused, not quoted).
base::result<std::string> render(const gateway_rules& g);

// Sidecar mode: airlock and the workload in one network namespace (a pod's). The output
// hook sends the TCP and DNS of every process but airlock's own (its uid: Envoy's and
// Istio's pattern) to airlock, and drops whatever else the workload sends out: UDP (QUIC
// included), ICMP, other IP protocols, both families. Loopback stays open inside the
// namespace, as containers of a pod talk over it; DNS to a loopback resolver is redirected
// all the same. Replies to connections that came in are let out. REDIRECT in the output hook
// sends to 127.0.0.1 and ::1, so airlock's listeners belong there (a UDP answer from a
// wildcard socket would leave from another address and miss its query's connection).
struct sidecar_rules {
  std::uint32_t airlock_uid = 0;  // refused: uid 0 would exempt every root process
  std::uint16_t proxy_port = 15001;
  std::uint16_t dns_port = 15053;
  std::uint16_t https_port = 0;  // as gateway_rules::https_port
  std::string table = "airlock_sidecar";
};

base::result<std::string> render(const sidecar_rules& s);

}  // namespace airlock::launcher
