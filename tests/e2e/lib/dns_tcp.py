#!/usr/bin/env python3
"""DNS over TCP as a careless or hostile client speaks it, for tests/e2e/dns_tcp_test.sh.

    dns_tcp.py SERVER MODE [ARGS]

Modes (each prints one line of key=value facts, and exits 0 unless the server broke the
protocol):
  zero                 sends a length of zero, waits for the close
  partial              sends a length prefix and part of a query, then nothing
  quiet                connects and sends nothing
  pipeline N NAME      sends N queries for NAME in one write, reads answers until the close
                       (or 10 s): answers=K in_order=0/1 closed=0/1 port=P
  hold N SECONDS       opens N connections one after another; those the server has closed
                       0.3 s later are counted refused=K; the rest are held SECONDS
Every wait is bounded (15 s at most)."""
import os
import socket
import struct
import sys
import time


def connect(server):
    # SRC picks the sandbox address to connect from (one of the test's two sessions).
    source = (os.environ["SRC"], 0) if os.environ.get("SRC") else None
    return socket.create_connection((server, 53), timeout=15, source_address=source)


def query(qid, name):
    q = b"".join(bytes([len(p)]) + p.encode() for p in name.split(".")) + b"\x00\x00\x01\x00\x01"
    m = struct.pack(">HHHHHH", qid, 0x0100, 1, 0, 0, 0) + q
    return struct.pack(">H", len(m)) + m


def wait_close(s):
    """Seconds until the server closed (reads and drops anything it sends)."""
    start = time.monotonic()
    try:
        while s.recv(4096):
            pass
    except (socket.timeout, ConnectionResetError):
        pass
    return time.monotonic() - start


def main():
    server, mode, args = sys.argv[1], sys.argv[2], sys.argv[3:]
    if mode in ("zero", "partial", "quiet"):
        s = connect(server)
        port = s.getsockname()[1]
        if mode == "zero":
            s.sendall(b"\x00\x00")
        elif mode == "partial":
            s.sendall(query(7, "ok.airlock.test")[:9])
        print(f"closed_after={wait_close(s):.2f} port={port}")
        return 0
    if mode == "pipeline":
        n, name = int(args[0]), args[1]
        s = connect(server)
        port = s.getsockname()[1]
        s.sendall(b"".join(query(i, name) for i in range(n)))
        s.settimeout(10)
        data, closed = b"", 0
        try:
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    closed = 1
                    break
                data += chunk
        except socket.timeout:
            pass
        except ConnectionResetError:
            closed = 1
        ids, at = [], 0
        while len(data) - at >= 2:
            size = struct.unpack(">H", data[at:at + 2])[0]
            if len(data) - at - 2 < size:
                break
            ids.append(struct.unpack(">H", data[at + 2:at + 4])[0])
            at += 2 + size
        in_order = int(ids == list(range(len(ids))))
        print(f"answers={len(ids)} in_order={in_order} closed={closed} port={port}")
        return 0
    if mode == "hold":
        n, seconds = int(args[0]), float(args[1])
        opened = [connect(server) for _ in range(n)]
        time.sleep(0.3)
        held, refused = [], 0
        for s in opened:
            s.setblocking(False)
            try:
                closed = s.recv(1) == b""
            except BlockingIOError:
                closed = False
            except ConnectionResetError:
                closed = True
            if closed:
                refused += 1
                s.close()
            else:
                held.append(s)
        print(f"refused={refused} held={len(held)}", flush=True)
        time.sleep(min(seconds, 15))
        return 0
    print(f"unknown mode {mode}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
