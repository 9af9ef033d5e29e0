#!/usr/bin/env python3
"""The raw-socket side of bench/soak: what curl and dig cannot do, run inside a namespace.

    soak_hostile.py mixed    GW_IP STOPFILE COUNTS END PACE
    soak_hostile.py flood    GW_IP STOPFILE COUNTS END RATE BURST_S PERIOD_S
    soak_hostile.py sentinel LEAKS END ADDR:PORT...

mixed (one per sandbox, beside soak_client.sh), one event loop, each on its own clock
(PACE scales every interval; 1 is the default load):
  silent          every 1 s: a TCP connection to 203.0.113.77 (:443 or :5432) that never
                  sends a byte, held until airlock ends it (at most 12 s)
  private_raw     every 2 s: an ssh-like banner to 10.66.0.10:22, a private address that
                  exists only in the soak's own "internet" namespace; held until closed
  dns_malformed   every 5 s: 12 malformed UDP packets to GW_IP:53 (the cases of
                  tests/e2e/dns_filter_test.sh); replies are read and dropped
  dns_tcp_zero    every 5 s: DNS over TCP with a length prefix of 0, until airlock closes
  dns_tcp_partial every 5 s: a length prefix and 7 bytes of a query, closed 0.5 s later
  dns_tcp_quiet   every 30 s: DNS over TCP asking nothing, until airlock closes (tcp_idle)
flood (one sandbox): every PERIOD_S, for BURST_S seconds, RATE new silent connections a
  second to 203.0.113.88:443, each held until airlock ends it (at most 6 s). Bounded: RATE
  at most 200, BURST_S at most 20, never more than 1,500 open.
sentinel (in the "internet" namespace): listens on each ADDR:PORT and writes one line to
  LEAKS for every connection that reaches it (nothing should: these are the addresses
  airlock must refuse), with the first bytes it sent.

A request is counted when it is finished (a UDP packet when sent): one line "KIND 1"
appended to COUNTS, flushed every 0.5 s, so a line in COUNTS always has its decision line
in the log already written or about to be. Everything stops at END (epoch seconds) or
when STOPFILE exists, or past 3 million requests: no new requests, those in flight are finished (at most 15 s), and
the process exits."""
import heapq
import os
import selectors
import socket
import struct
import sys
import time

SILENT_IP, FLOOD_IP, PRIVATE_IP = "203.0.113.77", "203.0.113.88", "10.66.0.10"
MAX_REQUESTS = 3_000_000  # per process: 240 minutes of the default flood is 1.44 million


def header(qd=1, an=0, ns=0, ar=0, flags=0x0100, qid=0x4242):
    return struct.pack(">HHHHHH", qid, flags, qd, an, ns, ar)


QUESTION = b"\x03www\x04soak\x04test\x00\x00\x01\x00\x01"
MALFORMED = [
    b"",
    b"\x00",
    header()[:11],
    header() + b"\xc0\x0c\x00\x01\x00\x01",
    header() + b"\xc0\x20\x00\x01\x00\x01" + b"\x00" * 20,
    header() + b"\x40" + b"a" * 64 + b"\x00\x00\x01\x00\x01",
    header(qd=2) + QUESTION + QUESTION,
    header(qd=0),
    header(qd=65535, an=65535, ns=65535, ar=65535),
    header(flags=0x8180) + QUESTION,
    header(flags=0x2800) + QUESTION,
    header() + QUESTION[:7],
]


def dns_tcp_query(name, qid=7):
    q = b"".join(bytes([len(p)]) + p.encode() for p in name.split(".")) + b"\x00\x00\x01\x00\x01"
    m = header(qid=qid) + q
    return struct.pack(">H", len(m)) + m


class Loop:
    """Timers and non-blocking sockets; a socket is finished when the peer closes, resets,
    or its own deadline passes."""

    def __init__(self, counts_path, stopfile, end):
        self.sel = selectors.DefaultSelector()
        self.timers = []  # (when, seq, fn)
        self.seq = 0
        self.counts_path, self.stopfile, self.end = counts_path, stopfile, end
        self.pending = []  # count lines not yet appended
        self.open = {}  # fd -> (sock, kind, deadline)
        self.stopping = False
        self.last_flush = 0.0
        self.started = 0  # requests started: past MAX_REQUESTS the loop stops as at END

    def at(self, delay, fn):
        self.seq += 1
        heapq.heappush(self.timers, (time.monotonic() + delay, self.seq, fn))

    def count(self, kind, n=1):
        self.pending.append(f"{kind} {n}\n")

    def flush(self):
        if self.pending:
            with open(self.counts_path, "a", encoding="ascii") as f:
                f.write("".join(self.pending))
            self.pending = []
        self.last_flush = time.monotonic()

    def connect(self, kind, addr, hold, first=b""):
        """Starts a TCP connection: counted as KIND when it ends, if it was established (one
        that never was counts as "unconnected:KIND": airlock never saw it)."""
        if self.stopping:
            return
        self.started += 1
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setblocking(False)
        try:
            s.connect(addr)
        except BlockingIOError:
            pass
        except OSError:
            s.close()
            self.count("unconnected:" + kind)
            return
        self.open[s.fileno()] = {"sock": s, "kind": kind, "deadline": time.monotonic() + hold,
                                 "first": first, "up": False}
        self.sel.register(s, selectors.EVENT_READ | selectors.EVENT_WRITE)

    def finish(self, c):
        s = c["sock"]
        self.open.pop(s.fileno(), None)
        self.sel.unregister(s)
        s.close()
        self.count(c["kind"] if c["up"] else "unconnected:" + c["kind"])

    def on_event(self, key, mask):
        c = self.open.get(key.fileobj.fileno())
        if c is None:
            return
        s = c["sock"]
        if mask & selectors.EVENT_WRITE and not c["up"]:
            if s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) != 0:
                self.finish(c)
                return
            c["up"] = True
            if c["first"]:
                try:
                    s.send(c["first"])
                except OSError:
                    pass
            self.sel.modify(s, selectors.EVENT_READ)
            return
        try:
            data = s.recv(4096)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:
            self.finish(c)

    def expire(self):
        now = time.monotonic()
        for c in list(self.open.values()):
            if now >= c["deadline"] or (self.stopping and now >= self.drain_until):
                self.finish(c)

    def should_stop(self):
        return time.time() >= self.end or self.started >= MAX_REQUESTS or os.path.exists(self.stopfile)

    def run(self):
        while True:
            now = time.monotonic()
            if not self.stopping and self.should_stop():
                self.stopping = True
                self.drain_until = now + 15
                self.timers = []
            if self.stopping and not self.open:
                break
            while self.timers and self.timers[0][0] <= now:
                _, _, fn = heapq.heappop(self.timers)
                fn()
            timeout = 0.1
            if self.timers:
                timeout = max(0.0, min(timeout, self.timers[0][0] - time.monotonic()))
            for key, mask in self.sel.select(timeout):
                self.on_event(key, mask)
            self.expire()
            if time.monotonic() - self.last_flush >= 0.5:
                self.flush()
        self.flush()


def every(loop, interval, first, fn):
    def tick():
        fn()
        loop.at(interval, tick)

    loop.at(first, tick)


def mixed(gw, stopfile, counts, end, pace):
    loop = Loop(counts, stopfile, end)
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.setblocking(False)
    loop.sel.register(udp, selectors.EVENT_READ)
    state = {"silent": 0}

    def silent():
        state["silent"] += 1
        loop.connect("silent", (SILENT_IP, 443 if state["silent"] % 2 else 5432), 12)

    def malformed():
        loop.started += len(MALFORMED)
        for pkt in MALFORMED:
            try:
                udp.sendto(pkt, (gw, 53))
                loop.count("dns_malformed")
            except OSError:
                loop.count("error:dns_malformed")

    def partial():  # a length prefix and 7 bytes of a query, then closed by its deadline
        loop.connect("dns_tcp_partial", (gw, 53), 0.5, dns_tcp_query("www.soak.test")[:9])

    every(loop, 1 * pace, 0.5, silent)
    every(loop, 2 * pace, 1.0, lambda: loop.connect("private_raw", (PRIVATE_IP, 22), 10, b"SSH-2.0-soak\r\n"))
    every(loop, 5 * pace, 2.0, malformed)
    every(loop, 5 * pace, 3.0, lambda: loop.connect("dns_tcp_zero", (gw, 53), 15, b"\x00\x00"))
    every(loop, 5 * pace, 4.0, partial)
    every(loop, 30 * pace, 5.0, lambda: loop.connect("dns_tcp_quiet", (gw, 53), 15))

    orig = loop.on_event

    def on_event(key, mask):
        if key.fileobj is udp:
            try:
                while udp.recv(4096):
                    pass
            except OSError:
                pass
            return
        orig(key, mask)

    loop.on_event = on_event
    loop.run()
    return 0


def flood(gw, stopfile, counts, end, rate, burst_s, period_s):
    rate, burst_s = min(rate, 200), min(burst_s, 20)
    loop = Loop(counts, stopfile, end)
    state = {"start": None, "opened": 0}

    def burst():
        state["start"], state["opened"] = time.monotonic(), 0
        step()

    def step():
        if loop.stopping or state["start"] is None:
            return
        t = time.monotonic() - state["start"]
        while state["opened"] < rate * min(t, burst_s) and len(loop.open) < 1500:
            loop.connect("flood", (FLOOD_IP, 443), 6)
            state["opened"] += 1
        if t < burst_s:
            loop.at(0.02, step)

    every(loop, period_s, 2.0, burst)
    loop.run()
    return 0


def sentinel(leaks, end, addrs):
    sel = selectors.DefaultSelector()
    for a in addrs:
        ip, port = a.rsplit(":", 1)
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind((ip, int(port)))
        s.listen(64)
        s.setblocking(False)
        sel.register(s, selectors.EVENT_READ, "listen")
    while time.time() < end:
        for key, _ in sel.select(1.0):
            s = key.fileobj
            if key.data == "listen":
                try:
                    c, peer = s.accept()
                except OSError:
                    continue
                c.settimeout(0.5)
                try:
                    first = c.recv(64)
                except OSError:
                    first = b""
                c.close()
                here = "%s:%d" % s.getsockname()
                with open(leaks, "a", encoding="ascii") as f:
                    f.write(f"{time.strftime('%H:%M:%S')} {peer[0]}:{peer[1]} -> {here} {first!r}\n")
    return 0


def main():
    mode, args = sys.argv[1], sys.argv[2:]
    if mode == "mixed":
        return mixed(args[0], args[1], args[2], float(args[3]), float(args[4]))
    if mode == "flood":
        return flood(args[0], args[1], args[2], float(args[3]), int(args[4]), float(args[5]), float(args[6]))
    if mode == "sentinel":
        return sentinel(args[0], float(args[1]), args[2:])
    print(f"unknown mode {mode}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
