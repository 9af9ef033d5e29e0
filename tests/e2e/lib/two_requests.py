#!/usr/bin/env python3
"""Two HTTP/1.1 requests on one connection from a sandbox, and what came back for each.

    two_requests.py ADDR PORT HOST1 HOST2 keepalive|pipelined [--proxy]

keepalive: the second request is sent after the first response was read whole;
pipelined: both in one write. With --proxy, the targets are absolute-form
(http://HOST/), as a client of an explicit proxy at ADDR:PORT sends them.
Prints one line per response: its status line and its body's first line
("1: HTTP/1.1 200 OK | origin says hello to ..."), and "closed" when the connection
ended before a second response."""
import socket
import sys


def request(host, proxy):
    target = f"http://{host}/" if proxy else "/"
    return f"GET {target} HTTP/1.1\r\nHost: {host}\r\n\r\n".encode()


def read_response(s, buf):
    while b"\r\n\r\n" not in buf:
        more = s.recv(4096)
        if not more:
            return None, buf
        buf += more
    head, _, rest = buf.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        k, _, v = line.partition(b":")
        if k.strip().lower() == b"content-length":
            length = int(v.strip())
    while len(rest) < length:
        more = s.recv(4096)
        if not more:
            break
        rest += more
    body = rest[:length].decode(errors="replace").strip()
    return head.split(b"\r\n")[0].decode() + " | " + body.splitlines()[0] if body else head.split(b"\r\n")[0].decode(), rest[length:]


def main():
    addr, port, h1, h2, mode = sys.argv[1:6]
    proxy = "--proxy" in sys.argv
    s = socket.create_connection((addr, int(port)), timeout=5)
    buf = b""
    if mode == "pipelined":
        s.sendall(request(h1, proxy) + request(h2, proxy))
    else:
        s.sendall(request(h1, proxy))
    for i in (1, 2):
        try:
            status, buf = read_response(s, buf)
        except (ConnectionResetError, socket.timeout):
            status = None
        print(f"{i}: {status}" if status else "closed")
        if status is None:
            break
        if i == 1 and mode == "keepalive":
            try:
                s.sendall(request(h2, proxy))
            except OSError:
                print("closed")
                break


main()
