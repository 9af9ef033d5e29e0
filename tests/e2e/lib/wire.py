#!/usr/bin/env python3
"""What crosses a link, for end-to-end tests that prove a packet never arrived.

    wire.py capture IFACE LOG SECONDS
        Logs every IPv4 and IPv6 frame seen on IFACE (both directions, taken with an
        AF_PACKET socket: the same tap tcpdump uses, before any filtering of the host that
        receives it) as one JSON line: pt (host, outgoing, ...), fam, src, dst, proto, and
        where the protocol has them sport, dport, syn (a SYN without ACK), icmp (type), head
        (the first 16 bytes of the payload, hex), tls (1: the payload starts a TLS handshake
        record), mark (the name of a marker, below). Writes LOG.ready once listening; stops
        by itself after SECONDS.
    wire.py mark ADDR NAME
        Sends a marker datagram (UDP port 9, "airlock-mark NAME") to ADDR: on the link it
        crosses it orders the capture, so a query can stop at it ("everything sent before
        this has been logged") or start after it.
    wire.py some|none LOG [--after MARK] [--until MARK] [--wait S] KEY=VALUE...
        Whether a logged packet matches every condition (KEY=VALUE, KEY!=VALUE, KEY^=PREFIX;
        values compared as text). `some` waits up to S seconds (default 5) for one; `none`
        needs --until: it waits for that marker (a capture that logs nothing must not pass
        as "nothing arrived") and then fails on any match before it. The matches are printed.
    wire.py udp-listen LOG SECONDS ADDR:PORT...
        A far-side UDP service: logs "SRC -> DST:PORT <bytes>" for each datagram received.
    wire.py send KIND ADDR [ARG]
        One attempt from wherever it runs. KIND: quic ADDR PORT (a 1200-byte datagram with a
        QUIC v1 Initial header), udp ADDR PORT, echo ADDR (ICMP or ICMPv6 echo request, raw
        socket), raw ADDR PROTO (a raw IP packet of that protocol number: 132 SCTP with an
        INIT chunk, 47 GRE carrying IPv4, anything else a few bytes), tls ADDR PORT [SNI]
        (a TCP connection sending a real ClientHello, with that SNI or none; prints what came
        back: server-hello, alert, closed, reset, timeout, refused, unreachable).
"""
import ipaddress
import json
import os
import select
import socket
import ssl
import struct
import sys
import time

PKTTYPES = {0: "host", 1: "broadcast", 2: "multicast", 3: "otherhost", 4: "outgoing"}
MARK = b"airlock-mark "


def parse(frame):
    if len(frame) < 14:
        return None
    ethertype = struct.unpack("!H", frame[12:14])[0]
    p = frame[14:]
    if ethertype == 0x0800 and len(p) >= 20:
        ihl = (p[0] & 15) * 4
        proto = p[9]
        rec = {"fam": 4, "src": socket.inet_ntop(socket.AF_INET, p[12:16]),
               "dst": socket.inet_ntop(socket.AF_INET, p[16:20]), "proto": proto}
        first_fragment = struct.unpack("!H", p[6:8])[0] & 0x1FFF == 0
        l4 = p[ihl:] if first_fragment else b""
    elif ethertype == 0x86DD and len(p) >= 40:
        proto = p[6]
        rec = {"fam": 6, "src": socket.inet_ntop(socket.AF_INET6, p[8:24]),
               "dst": socket.inet_ntop(socket.AF_INET6, p[24:40])}
        l4 = p[40:]
        while proto in (0, 43, 60) and len(l4) >= 8:  # hop-by-hop, routing, destination options
            proto, l4 = l4[0], l4[(l4[1] + 1) * 8:]
        if proto == 44 and len(l4) >= 8:  # fragment header
            first_fragment = struct.unpack("!H", l4[2:4])[0] & 0xFFF8 == 0
            proto, l4 = l4[0], (l4[8:] if first_fragment else b"")
        rec["proto"] = proto
    else:
        return None
    payload = b""
    if proto in (6, 17, 132, 136) and len(l4) >= 4:
        rec["sport"], rec["dport"] = struct.unpack("!HH", l4[:4])
    if proto == 6 and len(l4) >= 20:
        flags = l4[13]
        rec["syn"] = 1 if flags & 0x02 and not flags & 0x10 else 0
        payload = l4[(l4[12] >> 4) * 4:]
    elif proto in (17, 136):
        payload = l4[8:]
    elif proto in (1, 58) and l4:
        rec["icmp"] = l4[0]
        payload = l4[8:]
    else:
        payload = l4
    rec["head"] = payload[:16].hex()
    rec["tls"] = 1 if proto == 6 and payload[:2] == b"\x16\x03" else 0
    if proto == 17 and rec.get("dport") == 9 and payload.startswith(MARK):
        rec["mark"] = payload[len(MARK):].decode(errors="replace")
    return rec


def capture(iface, log, seconds):
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))  # ETH_P_ALL
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
    s.bind((iface, 0))
    deadline = time.monotonic() + seconds
    with open(log, "a", buffering=1, encoding="utf-8") as out:
        open(log + ".ready", "w").close()
        while (left := deadline - time.monotonic()) > 0:
            if not select.select([s], [], [], min(left, 1.0))[0]:
                continue
            frame, addr = s.recvfrom(65535)
            rec = parse(frame)
            if rec is not None:
                out.write(json.dumps({"pt": PKTTYPES.get(addr[2], str(addr[2])), **rec}) + "\n")


def mark(addr, name):
    fam = socket.AF_INET6 if ":" in addr else socket.AF_INET
    socket.socket(fam, socket.SOCK_DGRAM).sendto(MARK + name.encode(), (addr, 9))


def holds(rec, cond):
    for op in ("!=", "^=", "="):
        key, sep, want = cond.partition(op)
        if sep:
            break
    have = rec.get(key)
    have = "" if have is None else str(have)
    if op == "!=":
        return have != want
    if op == "^=":
        return have.startswith(want)
    return have == want


def query(kind, args):
    log, args = args[0], args[1:]
    after = until = None
    wait = 5.0
    conds = []
    while args:
        a = args.pop(0)
        if a == "--after":
            after = args.pop(0)
        elif a == "--until":
            until = args.pop(0)
        elif a == "--wait":
            wait = float(args.pop(0))
        else:
            conds.append(a)
    if kind == "none" and until is None:
        sys.exit("wire.py none needs --until MARK")
    deadline = time.monotonic() + wait
    while True:
        found, started, ended = [], after is None, False
        try:
            with open(log, encoding="utf-8") as f:
                for line in f:
                    rec = json.loads(line)
                    if rec.get("mark") is not None:
                        if rec["mark"] == after:
                            started = True
                        if rec["mark"] == until and started:
                            ended = True
                            break
                    if started and all(holds(rec, c) for c in conds):
                        found.append(line.rstrip("\n"))
        except FileNotFoundError:
            pass
        # Lines before a marker never change once it is logged; without one, wait for a match.
        done = ended if until is not None else bool(found)
        if done or time.monotonic() >= deadline:
            break
        time.sleep(0.1)
    for line in found[:8]:
        print(line)
    if until is not None and not ended:
        print(f"marker {until!r} never reached the capture {log} (after {after!r}): it proves nothing")
        return 1
    if kind == "some":
        if not found:
            print(f"no packet in {log} matches {' '.join(conds)}")
        return 0 if found else 1
    if found:
        print(f"{len(found)} packet(s) in {log} match {' '.join(conds)}")
    return 1 if found else 0


def udp_listen(log, seconds, targets):
    socks = []
    for t in targets:
        addr, _, port = t.rpartition(":")
        addr = addr.strip("[]")
        s = socket.socket(socket.AF_INET6 if ":" in addr else socket.AF_INET, socket.SOCK_DGRAM)
        s.bind((addr, int(port)))
        socks.append(s)
    deadline = time.monotonic() + seconds
    with open(log, "a", buffering=1, encoding="utf-8") as out:
        while (left := deadline - time.monotonic()) > 0:
            for s in select.select(socks, [], [], min(left, 1.0))[0]:
                data, peer = s.recvfrom(4096)
                here = s.getsockname()
                out.write(f"{peer[0]} -> {here[0]}:{here[1]} {data[:24]!r}\n")


def checksum(data):
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def client_hello(sni):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    tls = ctx.wrap_bio(ssl.MemoryBIO(), out := ssl.MemoryBIO(), server_hostname=sni)
    try:
        tls.do_handshake()
    except ssl.SSLWantReadError:
        pass
    return out.read()


def send(kind, addr, arg):
    six = ipaddress.ip_address(addr).version == 6
    fam = socket.AF_INET6 if six else socket.AF_INET
    if kind in ("quic", "udp"):
        if kind == "quic":  # long header, Initial, version 1, 8-byte DCID, empty SCID, padded
            data = bytes([0xC3]) + struct.pack("!I", 1) + bytes([8]) + os.urandom(8) + bytes([0])
            data += b"airlock-bypass quic"
            data += bytes(1200 - len(data))
        else:
            data = b"airlock-bypass udp"
        socket.socket(fam, socket.SOCK_DGRAM).sendto(data, (addr, int(arg)))
        print("sent")
    elif kind == "echo":
        proto = socket.IPPROTO_ICMPV6 if six else socket.IPPROTO_ICMP
        s = socket.socket(fam, socket.SOCK_RAW, proto)
        body = struct.pack("!HH", 0x4A4C, 1) + b"airlock-bypass echo"
        msg = struct.pack("!BBH", 128 if six else 8, 0, 0) + body
        if not six:  # the kernel fills in ICMPv6's checksum, not ICMP's
            msg = struct.pack("!BBH", 8, 0, checksum(msg)) + body
        s.sendto(msg, (addr, 0))
        print("sent")
    elif kind == "raw":
        proto = int(arg)
        if proto == 132:  # SCTP common header and an INIT chunk (CRC left zero)
            data = struct.pack("!HHII", 5000, 5000, 0, 0) + struct.pack("!BBHIIHHI", 1, 0, 20, 0x4A4C, 65535, 1, 1, 1)
        elif proto == 47:  # GRE carrying an IPv4 header
            data = struct.pack("!HH", 0, 0x0800) + bytes([0x45]) + bytes(19) + b"airlock-bypass gre"
        else:
            data = b"airlock-bypass raw " + str(proto).encode()
        socket.socket(fam, socket.SOCK_RAW, proto).sendto(data, (addr, 0))
        print("sent")
    elif kind == "tls":
        port, sni = int(arg[0]), (arg[1] if len(arg) > 1 else None)
        try:
            c = socket.create_connection((addr, port), timeout=5)
        except ConnectionRefusedError:
            print("refused")
            return 0
        except (socket.timeout, TimeoutError):
            print("timeout")
            return 0
        except OSError as e:
            print(f"unreachable ({e.strerror})")
            return 0
        c.settimeout(5)
        try:
            c.sendall(client_hello(sni))
            got = c.recv(5)
            print("alert" if got[:1] == b"\x15" else "server-hello" if got[:1] == b"\x16" else
                  "closed" if not got else f"other {got!r}")
        except ConnectionResetError:
            print("reset")
        except (socket.timeout, TimeoutError):
            print("timeout")
    else:
        sys.exit(f"unknown kind {kind}")
    return 0


def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "capture":
        capture(args[0], args[1], float(args[2]))
    elif cmd == "mark":
        mark(args[0], args[1])
    elif cmd in ("some", "none"):
        sys.exit(query(cmd, args))
    elif cmd == "udp-listen":
        udp_listen(args[0], float(args[1]), args[2:])
    elif cmd == "send":
        arg = args[2:] if args[0] == "tls" else (args[2] if len(args) > 2 else None)
        sys.exit(send(args[0], args[1], arg))
    else:
        sys.exit(__doc__)


main()
