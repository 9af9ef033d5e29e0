#!/usr/bin/env python3
"""Two HTTP/1.1 requests on one connection from a sandbox, and what came back for each.

    two_requests.py ADDR PORT HOST1 HOST2 keepalive|pipelined|in-body|chunked|ambiguous [--proxy]

keepalive: the second request is sent after the first response was read whole;
pipelined: both in one write. The others write all at once too: in-body, a POST for
HOST1 whose Content-Length body is a request for HOST2, then a request for HOST1;
chunked, a POST for HOST1 with a chunked body, then the request for HOST2; ambiguous,
a POST for HOST1 with both Content-Length and Transfer-Encoding, then HOST2's. With --proxy, the targets are absolute-form
(http://HOST/), as a client of an explicit proxy at ADDR:PORT sends them.
Prints one line per response: its status line and its body's first line
("1: HTTP/1.1 200 OK | origin says hello to ..."), and "closed" when the connection
ended before a second response."""
import socket
import sys


def request(host, proxy):
    target = f"http://{host}/" if proxy else "/"
    return f"GET {target} HTTP/1.1\r\nHost: {host}\r\n\r\n".encode()


def post(host, body, headers):
    return f"POST / HTTP/1.1\r\nHost: {host}\r\n{headers}\r\n".encode() + body


def first_write(mode, h1, h2, proxy):
    if mode == "pipelined":
        return request(h1, proxy) + request(h2, proxy)
    if mode == "in-body":
        inner = request(h2, proxy)
        return post(h1, inner, f"Content-Length: {len(inner)}\r\n") + request(h1, proxy)
    if mode == "chunked":
        return post(h1, b"3\r\nabc\r\n0\r\n\r\n", "Transfer-Encoding: chunked\r\n") + request(h2, proxy)
    if mode == "ambiguous":
        return post(h1, b"0\r\n\r\n", "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n") + request(h2, proxy)
    return request(h1, proxy)


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
    s.sendall(first_write(mode, h1, h2, proxy))
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
