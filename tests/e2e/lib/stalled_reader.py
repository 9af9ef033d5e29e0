#!/usr/bin/env python3
"""A watcher that stops reading for a while, for tests/e2e/live_tail_test.sh.

    stalled_reader.py SOCKET PAUSE READ_FOR

Asks the control API at SOCKET for GET /v1/decisions, reads nothing for PAUSE seconds (at
most 60) while the test makes decisions, then reads for READ_FOR seconds (at most 30) or
until the daemon ends the connection. Prints one line: bytes=N eof=0|1 dropped=N (the
tail_dropped lines' total) lines=N."""
import json
import socket
import sys
import time


def main():
    path, pause, read_for = sys.argv[1], min(float(sys.argv[2]), 60), min(float(sys.argv[3]), 30)
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.connect(path)
    s.sendall(b"GET /v1/decisions HTTP/1.1\r\nHost: airlock\r\n\r\n")
    time.sleep(pause)
    data, eof = b"", 0
    end = time.monotonic() + read_for
    try:
        while time.monotonic() < end:
            s.settimeout(max(0.01, end - time.monotonic()))
            chunk = s.recv(65536)
            if not chunk:
                eof = 1
                break
            data += chunk
    except (socket.timeout, ConnectionResetError):
        pass
    dropped = lines = 0
    for raw in data.split(b"\n"):
        raw = raw.strip()
        if not raw.startswith(b"{"):
            continue  # chunk sizes, headers, heartbeats
        try:
            v = json.loads(raw)
        except ValueError:
            continue  # a line cut by a chunk boundary
        if v.get("event") == "tail_dropped":
            dropped += v["lines"]
        else:
            lines += 1
    print(f"bytes={len(data)} eof={eof} dropped={dropped} lines={lines}")


main()
