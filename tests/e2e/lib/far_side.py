#!/usr/bin/env python3
"""A far-side TCP host for end-to-end tests: listens on each ADDR:PORT given, reads what a
client sends first (up to 512 bytes, 3 s), appends "ADDR:PORT <bytes as repr>" to LOG, and
answers "far:" and what it read. What a test proves blocked must leave no line here.

    far_side.py LOG SECONDS ADDR:PORT...

Stops by itself after SECONDS."""
import socket
import sys
import threading
import time


def serve(log, lock, addr, port):
    s = socket.socket(socket.AF_INET6 if ":" in addr else socket.AF_INET)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((addr, port))
    s.listen(16)
    while True:
        c, _ = s.accept()
        c.settimeout(3)
        try:
            got = c.recv(512)
            with lock, open(log, "a", encoding="utf-8") as f:
                f.write(f"{addr}:{port} {got!r}\n")
            c.sendall(b"far:" + got)
        except OSError:
            pass
        c.close()


def main():
    log, seconds, targets = sys.argv[1], float(sys.argv[2]), sys.argv[3:]
    lock = threading.Lock()
    for t in targets:
        addr, _, port = t.rpartition(":")
        threading.Thread(target=serve, args=(log, lock, addr, int(port)), daemon=True).start()
    time.sleep(seconds)


main()
