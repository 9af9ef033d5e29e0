#!/usr/bin/env python3
"""tcp_bulk.py: the bulk-tcp scenario's raw TCP byte source and its client: a stream that is
neither TLS nor HTTP, so a proxy can only relay it as opaque TCP.

  tcp_bulk.py serve ADDR PORT FILE
      listens on ADDR:PORT; each connection sends one line "bytes N\\n" (lower case: no HTTP
      method, no TLS record), gets the first N bytes of FILE (at most its size) by sendfile(2),
      then the server closes. One connection at a time (5 s for the request line, 30 s per
      socket operation after it).
      Runs until it is signalled (bench/run stops it by its PID).

  tcp_bulk.py fetch HOST PORT N [LIMIT_S]
      connects, asks for N bytes, reads to the end, prints one line
          bytes=B seconds=S MiBps=R ok=0|1 [error=...]
      (seconds: from before connect() to the server's FIN, like curl's total time; ok=1 only
      when exactly N bytes arrived) and exits 0 only when ok=1: a cut transfer is a failure,
      not a fast one. Every socket operation has a 10 s deadline, the whole transfer LIMIT_S
      (default 100 s).
"""
import os
import socket
import sys
import time

LINE_MAX = 64
LINE_TIMEOUT = 5  # s for the request line
IO_TIMEOUT = 30  # s per send or receive after it


def serve(addr, port, path):
    # One connection at a time, in the main thread: bench/run measures one transfer at a
    # time, and it reads the server's CPU from /proc/PID/task/*/schedstat, where a thread
    # that has ended no longer shows (a thread per connection would hide its sendfile).
    size = os.path.getsize(path)
    ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind((addr, port))
    ls.listen(64)
    while True:
        c, _ = ls.accept()
        try:
            c.settimeout(LINE_TIMEOUT)
            line = b""
            while b"\n" not in line and len(line) < LINE_MAX:
                d = c.recv(LINE_MAX - len(line))
                if not d:
                    break
                line += d
            parts = line.split()
            if len(parts) != 2 or parts[0] != b"bytes" or not parts[1].isdigit():
                continue
            n = min(int(parts[1]), size)
            c.settimeout(IO_TIMEOUT)
            with open(path, "rb") as f:
                c.sendfile(f, 0, n)
            c.shutdown(socket.SHUT_WR)
            # the client closes once it has read everything; wait for that (bounded) so
            # nothing unread is left on our side to turn the close into a reset
            end = time.monotonic() + IO_TIMEOUT
            while time.monotonic() < end and c.recv(4096):
                pass
        except OSError:
            pass
        finally:
            c.close()


def fetch(host, port, n, limit):
    t0 = time.monotonic()
    got, err = 0, ""
    try:
        s = socket.create_connection((host, port), timeout=10)
        s.settimeout(10)
        s.sendall(b"bytes %d\n" % n)
        buf = bytearray(1 << 20)
        mv = memoryview(buf)
        while True:
            k = s.recv_into(mv)
            if not k:
                break
            got += k
            if time.monotonic() - t0 > limit:
                err = "time limit"
                break
        s.close()
    except OSError as e:
        err = type(e).__name__ + (f" {e.strerror}" if getattr(e, "strerror", None) else "")
    dt = time.monotonic() - t0
    ok = got == n and not err
    print(f"bytes={got} seconds={dt:.6f} MiBps={got / 1048576 / dt if dt > 0 else 0:.1f} ok={int(ok)}"
          + (f" error={err.replace(' ', '_')}" if err else ""))
    return 0 if ok else 1


if __name__ == "__main__":
    a = sys.argv[1:]
    if len(a) == 4 and a[0] == "serve":
        serve(a[1], int(a[2]), a[3])
    elif len(a) in (4, 5) and a[0] == "fetch":
        sys.exit(fetch(a[1], int(a[2]), int(a[3]), float(a[4]) if len(a) == 5 else 100.0))
    else:
        sys.exit(__doc__)
