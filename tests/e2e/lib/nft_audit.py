#!/usr/bin/env python3
"""Audits a gateway table the way nft loaded it: `nft -j list table inet NAME` on stdin.

    nft_audit.py --iface IFACE --proxy-ports P[,P2] --dns-port D [--tproxy MARK]

Reads the table as rules (matches, statements, verdict), not as text, and checks that the
sandbox's link has no way out but airlock's ports:

  - the table is inet (IPv4 and IPv6 alike), and every rule is about IFACE (iifname, or
    oifname for the forward chain's return direction);
  - the NAT chain only redirects, to airlock's own ports (UDP and TCP 53 to the DNS port
    before any catch-all, every other TCP to a proxy port), and accepts nothing;
  - each filter chain the sandbox's packets meet (prerouting, input, forward) is walked in
    order: every accept before IFACE's catch-all drop must be one of the shapes meant to
    accept, nothing may jump, go to or return, and the catch-all drop must exist in input
    and forward, unconditional but for the interface, and be the chain's last word on IFACE.

The accepts that are meant to be there:
  input   admit-proxy  iifname IFACE, ct status dnat, tcp dport in the proxy ports (REDIRECT)
          admit-tproxy iifname IFACE, meta mark MARK, meta l4proto tcp (TPROXY)
          admit-dns    iifname IFACE, ct status dnat, meta l4proto in {tcp, udp}, th dport DNS
          ndp          iifname IFACE, icmpv6 type in {nd-neighbor-solicit, nd-neighbor-advert},
                       ip6 hoplimit 255 (IPv6 neighbour discovery with the gateway itself)
  divert  tproxy       iifname IFACE, tcp dport != 53, tproxy to the proxy port, mark set MARK
                       (TPROXY only: hands TCP to airlock's transparent socket)
A required condition may come with more (which only narrows); none may be missing or wider.
Prints each chain's walk and every problem ("PROBLEM: ..."); exits 1 when there is one."""
import json
import sys


def key_of(left):
    if "meta" in left:
        return "meta " + left["meta"]["key"]
    if "ct" in left:
        return "ct " + left["ct"]["key"]
    if "payload" in left:
        return left["payload"]["protocol"] + " " + left["payload"]["field"]
    if "fib" in left:
        return "fib " + ".".join(left["fib"].get("flags", [])) + " " + left["fib"]["result"]
    return json.dumps(left, sort_keys=True)


def values_of(right):
    if isinstance(right, dict) and "set" in right:
        return frozenset(str(v) for v in right["set"])
    if isinstance(right, list):
        return frozenset(str(v) for v in right)
    return frozenset([str(right)])


class Rule:
    def __init__(self, expr):
        self.matches = {}  # key -> (op, values)
        self.statements = []  # (name, body)
        self.verdict = None
        self.problems = []
        for e in expr:
            (name, body), = e.items()
            if name == "match":
                key = key_of(body["left"])
                if key in self.matches:
                    self.problems.append(f"matches {key} twice")
                self.matches[key] = (body["op"], values_of(body["right"]))
            elif name in ("accept", "drop", "reject", "jump", "goto", "return", "queue", "continue"):
                self.verdict = name
            elif name == "counter":
                pass
            else:
                self.statements.append((name, body))

    def has(self, key, op, values, subset=True):
        """The rule requires KEY OP VALUES (== or in: its values a subset of VALUES)."""
        got = self.matches.get(key)
        if got is None or got[0] != op:
            return False
        return got[1] <= frozenset(values) if subset else got[1] == frozenset(values)

    def text(self):
        parts = [f"{k} {op} {{{', '.join(sorted(v))}}}" if len(v) > 1 else f"{k} {op} {next(iter(v))}"
                 for k, (op, v) in self.matches.items()]
        parts += [f"{n} {json.dumps(b, sort_keys=True)}" for n, b in self.statements]
        return " ".join(parts + [self.verdict or "(no verdict)"])


def main():
    args = sys.argv[1:]
    opts = {}
    while args:
        a = args.pop(0)
        opts[a] = args.pop(0)
    iface = opts["--iface"]
    proxy_ports = set(opts["--proxy-ports"].split(","))
    dns = opts["--dns-port"]
    tproxy_mark = str(int(opts["--tproxy"], 0)) if "--tproxy" in opts else None  # nft -j prints it in decimal
    airlock_ports = proxy_ports | {dns}
    problems = []

    def problem(text):
        problems.append(text)
        print(f"PROBLEM: {text}")

    objs = json.load(sys.stdin)["nftables"]
    tables = [o["table"] for o in objs if "table" in o]
    if len(tables) != 1:
        problem(f"expected one table on stdin, got {len(tables)}")
        return 1
    if tables[0]["family"] != "inet":
        problem(f"table family {tables[0]['family']}: only inet sees IPv4 and IPv6 alike")
    chains = {o["chain"]["name"]: o["chain"] for o in objs if "chain" in o}
    rules = {name: [] for name in chains}
    for o in objs:
        if "rule" in o:
            rules[o["rule"]["chain"]].append(Rule(o["rule"]["expr"]))

    for name, c in chains.items():
        if "hook" not in c:
            problem(f"chain {name} is a regular chain: a jump target could accept for the sandbox")
    by_hook = {}
    for name, c in chains.items():
        if "hook" in c:
            by_hook.setdefault((c["type"], c["hook"]), []).append(name)
    want_hooks = {("filter", "prerouting"), ("nat", "prerouting"), ("filter", "input"), ("filter", "forward")}
    for th in sorted(want_hooks - set(by_hook)):
        problem(f"no {th[0]} chain on hook {th[1]}")
    for th in sorted(set(by_hook) - want_hooks):
        problem(f"unexpected {th[0]} chain on hook {th[1]}: {by_hook[th]}")

    def about_iface(r, name):
        if r.has("meta iifname", "==", {iface}, subset=False):
            return True
        return c_hook(name) == "forward" and r.has("meta oifname", "==", {iface}, subset=False)

    def c_hook(name):
        return chains[name].get("hook")

    def is_catch_all_drop(r):
        return r.verdict == "drop" and set(r.matches) == {"meta iifname"} and not r.statements

    def accept_shape(r, name):
        """Which of the meant accepts R is, or None."""
        hook, ctype = chains[name].get("hook"), chains[name].get("type")
        if ctype == "filter" and hook == "input":
            if (not tproxy_mark and r.has("ct status", "in", {"dnat"}) and r.has("tcp dport", "==", proxy_ports)
                    and not r.statements):
                return "admit-proxy"
            if (tproxy_mark and r.has("meta mark", "==", {tproxy_mark}) and r.has("meta l4proto", "==", {"tcp"})
                    and not r.statements):
                return "admit-tproxy"
            if (r.has("ct status", "in", {"dnat"}) and r.has("meta l4proto", "==", {"tcp", "udp"})
                    and r.has("th dport", "==", {dns}) and not r.statements):
                return "admit-dns"
            if (r.has("icmpv6 type", "==", {"nd-neighbor-solicit", "nd-neighbor-advert"})
                    and r.has("ip6 hoplimit", "==", {"255"}) and not r.statements):
                return "ndp"
        if ctype == "filter" and hook == "prerouting" and tproxy_mark:
            st = dict(r.statements)
            if (r.has("tcp dport", "!=", {"53"}, subset=False) and set(st) == {"tproxy", "mangle"}
                    and str(st["tproxy"].get("port")) in proxy_ports and "addr" not in st["tproxy"]
                    and st["mangle"].get("key") == {"meta": {"key": "mark"}}
                    and str(st["mangle"].get("value")) == tproxy_mark):
                return "tproxy"
        return None

    accepts_seen = []
    for name, c in chains.items():
        if "hook" not in c:
            continue
        print(f"chain {name} ({c['type']} {c['hook']} prio {c['prio']}, policy {c.get('policy')}):")
        dropped = False  # IFACE's catch-all drop met
        for i, r in enumerate(rules[name], 1):
            for p in r.problems:
                problem(f"{name} rule {i}: {p}")
            verdict = r.verdict or "-"
            label = ""
            if not about_iface(r, name):
                problem(f"{name} rule {i} is not limited to {iface}: {r.text()}")
            if c["type"] == "nat":
                st = dict(r.statements)
                if r.verdict is not None or set(st) != {"redirect"}:
                    problem(f"{name} rule {i}: a NAT rule may only redirect to airlock: {r.text()}")
                elif str(st["redirect"].get("port")) not in airlock_ports or "addr" in st["redirect"]:
                    problem(f"{name} rule {i} redirects elsewhere than airlock's ports: {r.text()}")
                elif (r.has("udp dport", "==", {"53"}) or r.has("tcp dport", "==", {"53"})) \
                        and str(st["redirect"]["port"]) != dns:
                    problem(f"{name} rule {i}: DNS redirected elsewhere than airlock's DNS port: {r.text()}")
            elif r.statements:
                if accept_shape(r, name) is None:
                    problem(f"{name} rule {i} has statements a filter rule here should not: {r.text()}")
            if r.verdict in ("jump", "goto", "return", "queue", "continue"):
                problem(f"{name} rule {i}: {r.verdict} leaves the walk: {r.text()}")
            if r.verdict == "accept":
                if c["type"] == "nat":
                    pass  # reported above
                elif dropped:
                    problem(f"{name} rule {i} accepts after the catch-all drop (unreachable, but not meant): {r.text()}")
                elif (shape := accept_shape(r, name)) is None:
                    problem(f"{name} rule {i} accepts what it is not meant to: {r.text()}")
                else:
                    label = f"  <- meant: {shape}"
                    accepts_seen.append(f"{name}:{shape}")
            if is_catch_all_drop(r):
                if dropped:
                    problem(f"{name} rule {i}: a second catch-all drop")
                dropped = True
                label = "  <- catch-all drop"
            elif dropped and r.verdict != "drop" and r.has("meta iifname", "==", {iface}):
                problem(f"{name} rule {i} follows the catch-all drop: {r.text()}")
            print(f"  {i}. {verdict:6} {r.text()}{label}")
        if c["type"] == "filter" and c["hook"] in ("input", "forward") and not dropped \
                and c.get("policy") != "drop":
            problem(f"chain {name} ({c['hook']}): no catch-all drop for {iface}, and its policy is "
                    f"{c.get('policy')}: what no rule names passes")
        if c["type"] == "filter" and c["hook"] == "forward":
            if not any(r.verdict == "drop" and set(r.matches) == {"meta oifname"} and
                       r.has("meta oifname", "==", {iface}) for r in rules[name]):
                problem(f"chain {name}: nothing drops what is forwarded towards {iface}")
        if c["type"] == "nat":
            rs = rules[name]
            tcp_all = [i for i, r in enumerate(rs) if r.has("meta l4proto", "==", {"tcp"}, subset=False)
                       and set(r.matches) == {"meta iifname", "meta l4proto"}]
            for proto in ("udp", "tcp"):
                dns_rules = [i for i, r in enumerate(rs) if r.has(f"{proto} dport", "==", {"53"}, subset=False)
                             and set(r.matches) == {"meta iifname", f"{proto} dport"}]
                if not dns_rules:
                    problem(f"chain {name}: {proto} port 53 is not redirected to airlock's DNS")
                elif tcp_all and dns_rules[0] > tcp_all[0]:
                    problem(f"chain {name}: tcp port 53 is taken by the catch-all TCP redirect first")
            if not tproxy_mark and not tcp_all:
                problem(f"chain {name}: no catch-all redirect of TCP to the proxy")
            if tproxy_mark and tcp_all:
                problem(f"chain {name}: TPROXY mode, yet TCP is NATed")
    want = {"admit-dns", "ndp", "admit-tproxy" if tproxy_mark else "admit-proxy"} | ({"tproxy"} if tproxy_mark else set())
    for w in sorted(want - {a.split(":")[1] for a in accepts_seen}):
        problem(f"the meant accept {w} is missing: the sandbox could not use airlock")
    print(f"{len(problems)} problem(s); accepts before the drop: {', '.join(accepts_seen) or 'none'}")
    return 1 if problems else 0


sys.exit(main())
