#!/usr/bin/env python3
"""dns_rtt.py SERVER PREFIX COUNT RATE: asks COUNT A queries for unique names
PREFIX-<n>.<zone> (PREFIX carries the zone) one at a time, at most RATE per second, over UDP
to SERVER:53, and prints one round-trip time in microseconds per query answered NOERROR with data
("bad" for any other answer, "lost" for none within 2 s). Bounded: COUNT queries, 2 s each at most."""
import os, random, socket, struct, sys, time

server, prefix, count, rate = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(2.0)
tag = os.urandom(3).hex()
for n in range(count):
    qid = random.randrange(65536)
    label, _, zone = prefix.partition(".")
    name = f"{label}-{tag}-{n}.{zone}"
    q = struct.pack(">HHHHHH", qid, 0x0100, 1, 0, 0, 0)
    q += b"".join(bytes([len(p)]) + p.encode() for p in name.split(".")) + b"\0" + struct.pack(">HH", 1, 1)
    t = time.perf_counter()
    s.sendto(q, (server, 53))
    try:
        while True:
            data = s.recv(4096)
            if len(data) >= 2 and struct.unpack(">H", data[:2])[0] == qid:
                break
        rtt = round((time.perf_counter() - t) * 1e6)
        flags, _, ancount = struct.unpack(">HHH", data[2:8])
        # Only a real answer counts: a refusal (NXDOMAIN, SERVFAIL) would be a different path.
        print(rtt if flags & 0xF == 0 and ancount > 0 else "bad")
    except socket.timeout:
        print("lost")
    time.sleep(max(0.0, 1.0 / rate - (time.perf_counter() - t)))
