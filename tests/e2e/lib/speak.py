#!/usr/bin/env python3
"""Speaks one kind of first bytes to ADDR:PORT from a sandbox and prints what came back:
the first line of the answer, "closed" (a FIN before any byte), "reset", or, for TLS,
"tls-ok" / "tls-refused: WHY".

    speak.py ADDR PORT opaque|http HOST|upgrade HOST|tls-sni NAME|tls-nosni [--proxy PROXY_ADDR:PORT]

upgrade: a WebSocket Upgrade request; after a 101, "ping" is sent and the echo printed too.

With --proxy the connection is a CONNECT ADDR:PORT tunnel through airlock's explicit
listener first ("connect: STATUS" is printed when it is not 200). TLS trusts the CA in
$CA_FILE when it is set, and asks for http/1.1."""
import os
import socket
import ssl
import sys


def first_line(data):
    return data.split(b"\r\n")[0].decode(errors="replace") if data else "closed"


def read_head(s):
    head = b""
    while b"\r\n\r\n" not in head:
        more = s.recv(4096)
        if not more:
            break
        head += more
    return head


def main():
    args = sys.argv[1:]
    proxy = None
    if "--proxy" in args:
        i = args.index("--proxy")
        proxy = args[i + 1]
        del args[i:i + 2]
    addr, port, kind = args[0], int(args[1]), args[2]
    arg = args[3] if len(args) > 3 else None
    if proxy:
        phost, _, pport = proxy.rpartition(":")
        s = socket.create_connection((phost, int(pport)), timeout=5)
        s.sendall(f"CONNECT {addr}:{port} HTTP/1.1\r\nHost: {addr}:{port}\r\n\r\n".encode())
        status = first_line(read_head(s))
        if " 200 " not in status + " ":
            print("connect: " + status)
            return
    else:
        s = socket.create_connection((addr, port), timeout=5)
    try:
        if kind in ("tls-sni", "tls-nosni"):
            ctx = ssl.create_default_context(cafile=os.environ.get("CA_FILE"))
            ctx.set_alpn_protocols(["http/1.1"])
            if kind == "tls-nosni":
                ctx.check_hostname = False
            try:
                t = ctx.wrap_socket(s, server_hostname=arg if kind == "tls-sni" else None)
                t.close()
                print("tls-ok")
            except (ssl.SSLError, OSError) as e:
                print("tls-refused: " + type(e).__name__)
            return
        if kind == "upgrade":
            s.sendall(f"GET / HTTP/1.1\r\nHost: {arg}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n".encode())
            head = read_head(s)
            print(first_line(head))
            if b" 101 " in head:
                s.sendall(b"ping")
                print(s.recv(4096).decode())
            return
        if kind == "opaque":
            s.sendall(b"SSH-2.0-sandbox\r\n")
        else:
            s.sendall(f"GET / HTTP/1.1\r\nHost: {arg}\r\nConnection: close\r\n\r\n".encode())
        print(first_line(s.recv(4096)))
    except ConnectionResetError:
        print("reset")
    except socket.timeout:
        print("timeout")


main()
