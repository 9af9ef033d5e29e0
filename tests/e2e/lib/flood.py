#!/usr/bin/env python3
"""One sandbox misbehaving on purpose, for tests/e2e/fair_share_test.sh.

    flood.py IP:PORT HOLD RATE SECONDS [DNS_IP QPS]

Opens HOLD TCP connections to IP:PORT whose TLS handshake never finishes (a record header
announcing a ClientHello, then nothing: airlock waits for the rest until its peek timeout,
where a connection that sent nothing at all is judged silent at once) and keeps them, then
for SECONDS opens RATE more a second (kept too, the oldest closed past 6,000 open), and,
with DNS_IP, sends QPS DNS queries a second for names nobody allows, never reading the
answers.
Bounded: SECONDS at most 30, HOLD at most 5,000, RATE at most 2,000, QPS at most 10,000.
Prints one line: opened=N dns_sent=N."""
import collections
import errno
import resource
import socket
import struct
import sys
import time


def main():
    ip, port = sys.argv[1].rsplit(":", 1)
    hold, rate = min(int(sys.argv[2]), 5000), min(int(sys.argv[3]), 2000)
    seconds = min(float(sys.argv[4]), 30)
    dns_ip, qps = (sys.argv[5], min(int(sys.argv[6]), 10000)) if len(sys.argv) > 6 else (None, 0)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    cap = min(6000, hard - 200)
    open_socks = collections.deque()
    unsent = collections.deque()  # connecting: the header goes once the socket is writable
    opened = 0
    header = b"\x16\x03\x01\x02\x00"  # handshake record, 512 bytes announced, none sent

    def open_one():
        nonlocal opened
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setblocking(False)
        err = s.connect_ex((ip, int(port)))
        if err not in (0, errno.EINPROGRESS):
            s.close()
            return
        opened += 1
        open_socks.append(s)
        unsent.append(s)
        while len(open_socks) > cap:
            open_socks.popleft().close()

    def send_headers():
        for _ in range(len(unsent)):
            s = unsent.popleft()
            if s.fileno() < 0:
                continue  # closed past the cap
            try:
                s.send(header)
            except (BlockingIOError, InterruptedError):
                unsent.append(s)  # still connecting
            except OSError:
                pass  # refused or reset: airlock said no

    for _ in range(hold):
        open_one()
    send_headers()
    udp = None
    if dns_ip:
        udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        udp.setblocking(False)
    sent = 0
    tick = 0.01
    start = time.monotonic()
    while time.monotonic() - start < seconds:
        t = time.monotonic() - start
        while opened - hold < rate * t:
            open_one()
        send_headers()
        while udp and sent < qps * t:
            label = b"q%07d" % sent
            name = bytes([len(label)]) + label + b"\x05flood\x04test\x00"
            try:
                udp.sendto(struct.pack(">HHHHHH", sent & 0xFFFF, 0x0100, 1, 0, 0, 0) + name + b"\x00\x01\x00\x01",
                           (dns_ip, 53))
            except BlockingIOError:
                pass
            sent += 1
        if udp:
            try:
                while udp.recv(4096):
                    pass
            except BlockingIOError:
                pass
        time.sleep(tick)
    print(f"opened={opened} dns_sent={sent}", flush=True)
    for s in open_socks:
        s.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
