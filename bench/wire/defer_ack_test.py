#!/usr/bin/env python3
"""defer_ack_test.py HOST PORT DEFER(0|1) N : N connections shaped like airlock's upstream
connect (non-blocking connect, then the first bytes sent as soon as the socket takes them),
with or without TCP_DEFER_ACCEPT on the connecting socket; 517 bytes sent, then close.
Run in the client namespace beside a capture, to see whether the handshake's last ACK is
merged with the first data."""
import select, socket, sys, time
host, port, defer, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
for _ in range(n):
    s = socket.socket(); s.setblocking(False)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    if defer:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_DEFER_ACCEPT, 1)
    s.connect_ex((host, port))
    try:
        s.send(b"\x16" + b"x" * 516)
    except BlockingIOError:
        select.select([], [s], [], 2); s.send(b"\x16" + b"x" * 516)
    time.sleep(0.05); s.close(); time.sleep(0.02)
