#!/usr/bin/env python3
"""analyze.py OUTDIR [--json FILE] [--seq N]

Reads OUTDIR/gc.pcap (client <-> gateway veth, captured in the gateway) and OUTDIR/gs.pcap
(gateway <-> origin veth), splits them into TCP connections, and prints per-connection
figures (medians over connections) for each leg and direction: packets, payload segments,
payload sizes, pure ACKs, FIN, RST, SYN resends, data retransmissions; the time order of
events across both legs (client leg and origin leg paired in SYN order, for sequential
runs); and the most common event sequences.

Only struct; pcap (not pcapng), Ethernet link type, IPv4/TCP.
"""
import collections
import json
import statistics
import struct
import sys

CLIENT_NET = "198.18.101."
ORIGIN = "198.18.102.2"

FIN, SYN, RST, PSH, ACK = 0x01, 0x02, 0x04, 0x08, 0x10


def ip4(b):
    return ".".join(str(x) for x in b)


def read_pcap(path):
    with open(path, "rb") as f:
        data = f.read()
    magic = struct.unpack("<I", data[:4])[0]
    if magic == 0xA1B2C3D4:
        e, nano = "<", False
    elif magic == 0xD4C3B2A1:
        e, nano = ">", False
    elif magic == 0xA1B23C4D:
        e, nano = "<", True
    elif magic == 0x4D3CB2A1:
        e, nano = ">", True
    else:
        raise SystemExit(f"{path}: not a pcap file")
    linktype = struct.unpack(e + "I", data[20:24])[0]
    off = 24
    out = []
    while off + 16 <= len(data):
        ts, frac, incl, orig = struct.unpack(e + "IIII", data[off:off + 16])
        off += 16
        pkt = data[off:off + incl]
        off += incl
        t = ts + frac / (1e9 if nano else 1e6)
        if linktype == 1:
            if len(pkt) < 14:
                continue
            etype = struct.unpack("!H", pkt[12:14])[0]
            l3 = pkt[14:]
            if etype == 0x8100:
                etype = struct.unpack("!H", pkt[16:18])[0]
                l3 = pkt[18:]
            if etype != 0x0800:
                continue
        elif linktype == 113:  # Linux cooked
            l3 = pkt[16:]
        elif linktype == 101:
            l3 = pkt
        else:
            raise SystemExit(f"{path}: link type {linktype} not handled")
        if len(l3) < 20 or l3[0] >> 4 != 4:
            continue
        ihl = (l3[0] & 15) * 4
        total = struct.unpack("!H", l3[2:4])[0]
        src, dst = ip4(l3[12:16]), ip4(l3[16:20])
        if l3[9] == 17:
            out.append(dict(t=t, udp=True, src=src, dst=dst))
            continue
        if l3[9] != 6:
            continue
        tcp = l3[ihl:]
        if len(tcp) < 20:
            continue
        sport, dport, seq, ack = struct.unpack("!HHII", tcp[:12])
        doff = (tcp[12] >> 4) * 4
        flags = tcp[13]
        win = struct.unpack("!H", tcp[14:16])[0]
        plen = total - ihl - doff
        out.append(dict(t=t, src=src, dst=dst, sport=sport, dport=dport, seq=seq, ack=ack, flags=flags,
                        win=win, len=plen, head=bytes(tcp[doff:doff + 48])))
    return out


class Conn:
    def __init__(self, p):
        self.a = (p["src"], p["sport"])  # initiator (sent the first SYN)
        self.b = (p["dst"], p["dport"])
        self.isn = p["seq"]
        self.pkts = []

    def dir_of(self, p):
        return "a" if (p["src"], p["sport"]) == self.a else "b"


def split_conns(pkts):
    cur = {}
    conns = []
    for p in pkts:
        if p.get("udp"):
            continue
        key = frozenset([(p["src"], p["sport"]), (p["dst"], p["dport"])])
        c = cur.get(key)
        pure_syn = p["flags"] & SYN and not p["flags"] & ACK
        if pure_syn and (c is None or (c.isn != p["seq"])):
            c = Conn(p)
            cur[key] = c
            conns.append(c)
        if c is None:
            continue  # a connection whose SYN came before the capture
        c.pkts.append(p)
    return conns


def dir_stats(c, d):
    s = dict(pkts=0, data_segs=0, sizes=[], pure_acks=0, fin=0, rst=0, syn=0, syn_resend=0, retrans=0,
             dup_acks=0, psh=0)
    hi = None  # highest seq end seen (relative)
    last_ack = None
    for p in c.pkts:
        if c.dir_of(p) != d:
            continue
        s["pkts"] += 1
        f = p["flags"]
        if f & SYN:
            s["syn"] += 1
            if s["syn"] > 1:
                s["syn_resend"] += 1
        if f & FIN:
            s["fin"] += 1
        if f & RST:
            s["rst"] += 1
        if f & PSH:
            s["psh"] += 1
        if p["len"] > 0:
            s["data_segs"] += 1
            s["sizes"].append(p["len"])
            end = (p["seq"] + p["len"]) & 0xFFFFFFFF
            if hi is not None and ((end - hi) & 0xFFFFFFFF) > 0x7FFFFFFF or (hi is not None and end == hi):
                s["retrans"] += 1
            else:
                hi = end
        elif f & (SYN | FIN | RST) == 0 and f & ACK:
            s["pure_acks"] += 1
            if last_ack == p["ack"]:
                s["dup_acks"] += 1
        if f & ACK:
            last_ack = p["ack"]
    return s


def tok(c, p, names):
    d = c.dir_of(p)
    who = names[0] + ">" + names[1] if d == "a" else names[1] + ">" + names[0]
    f = p["flags"]
    t = ""
    if f & SYN:
        t += "S"
        if f & ACK:
            t += "A"
    elif f & RST:
        t += "R"
    else:
        if p["len"]:
            t += str(p["len"])
        if f & FIN:
            t += "F"
        if not t:
            t = "."
    return who + ":" + t


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def main():
    out = sys.argv[1]
    seq_n = 3
    js = None
    complete = False
    args = sys.argv[2:]
    while args:
        if args[0] == "--seq":
            seq_n = int(args[1]); args = args[2:]
        elif args[0] == "--complete":
            complete = True; args = args[1:]
        elif args[0] == "--json":
            js = args[1]; args = args[2:]
        else:
            raise SystemExit(__doc__)
    gcp, gsp = read_pcap(out + "/gc.pcap"), read_pcap(out + "/gs.pcap")
    udp = sum(1 for p in gcp + gsp if p.get("udp"))
    gc = split_conns(gcp)
    gs = split_conns(gsp)
    # client leg: initiated by the client; origin leg: to the origin's :443
    gc = [c for c in gc if c.a[0].startswith(CLIENT_NET) and c.b[1] == 443]
    gs = [c for c in gs if c.b == (ORIGIN, 443)]
    # pair the legs by the ClientHello's random (bytes 11..43 of the first client payload),
    # which every proxy forwards unchanged; SYN order as a fallback
    def hello_key(c):
        for p in c.pkts:
            if c.dir_of(p) == "a" and p["len"] > 0:
                return p["head"][11:43] if len(p["head"]) >= 43 else None
        return None
    by_key = {}
    for s in gs:
        k = hello_key(s)
        if k:
            by_key[k] = s
    gs_sorted = sorted(gs, key=lambda c: c.pkts[0]["t"])
    pairs = []
    j = 0
    for c in sorted(gc, key=lambda c: c.pkts[0]["t"]):
        k = hello_key(c)
        if k and k in by_key:
            pairs.append((c, by_key[k]))
            continue
        while j < len(gs_sorted) and gs_sorted[j].pkts[0]["t"] < c.pkts[0]["t"]:
            j += 1
        pairs.append((c, gs_sorted[j] if j < len(gs_sorted) else None))
        j += 1
    dropped = 0
    if complete:
        # only connections that ran to their end: the origin's FIN seen and the whole
        # answer (>= 2300 bytes) delivered to the client (a timed load cuts its last ones)
        def whole(c, s):
            if s is None:
                return False
            down = sum(p["len"] for p in c.pkts if c.dir_of(p) == "b")
            fin = any(p["flags"] & FIN for p in s.pkts if s.dir_of(p) == "b")
            return down >= 2300 and fin
        kept = [(c, s) for c, s in pairs if whole(c, s)]
        dropped = len(pairs) - len(kept)
        pairs = kept
        gc = [c for c, _ in pairs]
        gs = [s for _, s in pairs]
    res = {"incomplete_dropped": dropped, "dir": out, "client_conns": len(gc), "origin_conns": len(gs), "dns_udp_packets": udp}
    legs = {"client_leg": (gc, ("C", "P")), "origin_leg": (gs, ("P", "O"))}
    for leg, (conns, names) in legs.items():
        r = {}
        for d, label in (("a", names[0] + ">" + names[1]), ("b", names[1] + ">" + names[0])):
            per = [dir_stats(c, d) for c in conns]
            agg = {}
            for k in ("pkts", "data_segs", "pure_acks", "fin", "rst", "syn_resend", "retrans", "dup_acks", "psh"):
                vals = [x[k] for x in per]
                agg[k] = {"median": med(vals), "mean": round(sum(vals) / len(vals), 3) if vals else None,
                          "min": min(vals) if vals else None, "max": max(vals) if vals else None}
            sizes = collections.Counter(tuple(x["sizes"]) for x in per)
            agg["sizes_top"] = [(list(k), v) for k, v in sizes.most_common(3)]
            agg["bytes_median"] = med([sum(x["sizes"]) for x in per])
            r[label] = agg
        seqs = collections.Counter(tuple(tok(c, p, names) for p in c.pkts) for c in conns)
        r["seq_top"] = [(" ".join(k), v) for k, v in seqs.most_common(seq_n)]
        r["duration_ms_median"] = med([(c.pkts[-1]["t"] - c.pkts[0]["t"]) * 1e3 for c in conns])
        # who closes first
        first_close = collections.Counter()
        for c in conns:
            for p in c.pkts:
                if p["flags"] & (FIN | RST):
                    first_close[tok(c, p, names)] += 1
                    break
        r["first_close"] = first_close.most_common(4)
        res[leg] = r
    # cross-leg timeline (µs relative to the client's SYN), and merged sequences
    marks = collections.defaultdict(list)
    gaps = collections.defaultdict(list)
    merged = collections.Counter()
    for c, s in pairs:
        if s is None:
            continue
        t0 = c.pkts[0]["t"]

        def first(conn, cond):
            for p in conn.pkts:
                if cond(conn, p):
                    return (p["t"] - t0) * 1e6
            return None

        m = {
            "C>P SYN": first(c, lambda k, p: k.dir_of(p) == "a" and p["flags"] & SYN),
            "P>C SYN-ACK": first(c, lambda k, p: k.dir_of(p) == "b" and p["flags"] & SYN),
            "C>P first data (ClientHello)": first(c, lambda k, p: k.dir_of(p) == "a" and p["len"] > 0),
            "P>O SYN": first(s, lambda k, p: k.dir_of(p) == "a" and p["flags"] & SYN),
            "O>P SYN-ACK": first(s, lambda k, p: k.dir_of(p) == "b" and p["flags"] & SYN),
            "P>O first data (ClientHello fwd)": first(s, lambda k, p: k.dir_of(p) == "a" and p["len"] > 0),
            "O>P first data (ServerHello..)": first(s, lambda k, p: k.dir_of(p) == "b" and p["len"] > 0),
            "P>C first data (ServerHello fwd)": first(c, lambda k, p: k.dir_of(p) == "b" and p["len"] > 0),
            "O>P first FIN": first(s, lambda k, p: k.dir_of(p) == "b" and p["flags"] & (FIN | RST)),
            "P>C first FIN/RST": first(c, lambda k, p: k.dir_of(p) == "b" and p["flags"] & (FIN | RST)),
            "C>P first FIN/RST": first(c, lambda k, p: k.dir_of(p) == "a" and p["flags"] & (FIN | RST)),
            "P>O first FIN/RST": first(s, lambda k, p: k.dir_of(p) == "a" and p["flags"] & (FIN | RST)),
            "last packet either leg": (max(c.pkts[-1]["t"], s.pkts[-1]["t"]) - t0) * 1e6,
        }
        for k, v in m.items():
            marks[k].append(v)
        def gap(a, b):
            return None if m[a] is None or m[b] is None else m[b] - m[a]
        gaps["ClientHello in -> proxy SYN to origin"].append(gap("C>P first data (ClientHello)", "P>O SYN"))
        gaps["origin SYN-ACK -> ClientHello forwarded"].append(gap("O>P SYN-ACK", "P>O first data (ClientHello fwd)"))
        gaps["origin first data -> forwarded to client"].append(gap("O>P first data (ServerHello..)", "P>C first data (ServerHello fwd)"))
        gaps["origin FIN -> FIN/RST to client"].append(gap("O>P first FIN", "P>C first FIN/RST"))
        ev = [(p["t"], 0, tok(c, p, ("C", "P"))) for p in c.pkts] + [(p["t"], 1, tok(s, p, ("P", "O"))) for p in s.pkts]
        ev.sort()
        merged[" ".join(e[2] for e in ev)] += 1
    res["timeline_us_median"] = {k: (round(med(v), 1) if med(v) is not None else None) for k, v in marks.items()}
    res["merged_top"] = merged.most_common(seq_n)
    res["gaps_us_median"] = {k: (round(med(v), 1) if med(v) is not None else None) for k, v in gaps.items()}
    res["pairs"] = sum(1 for _, s in pairs if s is not None)
    if js:
        with open(js, "w") as f:
            json.dump(res, f, indent=1)
    pr(res)


def pr(res):
    print(f"== {res['dir']}: client-leg conns {res['client_conns']}, origin-leg conns {res['origin_conns']}, paired {res['pairs']}, DNS (UDP 53) packets {res['dns_udp_packets']}, incomplete left out {res['incomplete_dropped']}")
    for leg in ("client_leg", "origin_leg"):
        r = res[leg]
        print(f"-- {leg}: duration median {r['duration_ms_median']:.2f} ms; first close: {r['first_close']}")
        for label, agg in r.items():
            if not isinstance(agg, dict):
                continue
            line = "  ".join(f"{k}={agg[k]['median']}({agg[k]['mean']})" for k in
                             ("pkts", "data_segs", "pure_acks", "fin", "rst", "syn_resend", "retrans", "dup_acks"))
            print(f"   {label}: {line}  bytes={agg['bytes_median']}")
            for sz, n in agg["sizes_top"]:
                print(f"      sizes {sz} x{n}")
        for s, n in r["seq_top"]:
            print(f"   seq x{n}: {s}")
    print("-- timeline (median µs from client SYN):")
    for k, v in sorted(res["timeline_us_median"].items(), key=lambda kv: (kv[1] is None, kv[1])):
        print(f"   {str(v):>10}  {k}")
    for k, v in res["gaps_us_median"].items():
        print(f"   gap {k}: median {v} µs")
    for s, n in res["merged_top"]:
        print(f"   merged x{n}: {s}")


if __name__ == "__main__":
    main()
