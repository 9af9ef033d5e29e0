#!/usr/bin/env python3
"""inspect_probe.py HOST CAFILE : one verified TLS connection to HOST:443 trusting CAFILE
only, one GET /small.html read whole (so TLS 1.3 session tickets, if any, arrive), then a
second connection offering that session. Prints one line: the protocol, the cipher, the
leaf's issuer CN, the status, and resumed=1 if the second handshake resumed the session
(the inspect scenario wants full handshakes everywhere). Every socket operation has a
timeout."""
import socket
import ssl
import sys

host, cafile = sys.argv[1], sys.argv[2]
ctx = ssl.create_default_context(cafile=cafile)


def get(session=None):
    raw = socket.create_connection((host, 443), timeout=5)
    s = ctx.wrap_socket(raw, server_hostname=host, session=session)
    s.sendall(f"GET /small.html HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = s.recv(4096)
        if not chunk:
            break
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        k, _, v = line.partition(b":")
        if k.strip().lower() == b"content-length":
            length = int(v)
    while len(body) < length:
        chunk = s.recv(4096)
        if not chunk:
            break
        body += chunk
    status = head.split(b"\r\n")[0].decode(errors="replace")
    issuer = dict(x[0] for x in s.getpeercert()["issuer"]).get("commonName", "?")
    out = (s.version(), s.cipher()[0], issuer, status, s.session, s.session_reused)
    s.close()
    return out


try:
    version, cipher, issuer, status, session, _ = get()
    resumed = get(session)[5]
    print(f"{version} {cipher}, issuer \"{issuer}\", {status!r}, resumed={int(bool(resumed))}")
except (OSError, ssl.SSLError, KeyError, ValueError) as e:
    print(f"probe failed: {e}")
    sys.exit(1)
