#!/usr/bin/env python3
"""split_hello.py MODE HOST ADDR CAFILE: a real TLS handshake with Python's ssl module over a
memory BIO, whose ClientHello goes out cut up: MODE "segments" sends it in 7 TCP segments
20 ms apart; "records" re-frames it into TLS records of 100 bytes each, sent at once. Then
GET / and prints the response body, or "refused: <error>" when the handshake fails."""
import socket, ssl, struct, sys, time

mode, host, addr, cafile = sys.argv[1:5]
ctx = ssl.create_default_context(cafile=cafile)
incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
tls = ctx.wrap_bio(incoming, outgoing, server_hostname=host)
sock = socket.create_connection((addr, 443), timeout=8)
sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

def first_flight(hello):
    if mode == "segments":
        step = -(-len(hello) // 7)
        for i in range(0, len(hello), step):
            sock.sendall(hello[i:i + step]); time.sleep(0.02)
    else:  # one handshake message in several records
        body = hello[5:]
        out = b""
        for i in range(0, len(body), 100):
            part = body[i:i + 100]
            out += hello[:3] + struct.pack(">H", len(part)) + part
        sock.sendall(out)

first = True
try:
    while True:
        try:
            tls.do_handshake()
            break
        except ssl.SSLWantReadError:
            pending = outgoing.read()
            if pending:
                if first: first_flight(pending); first = False
                else: sock.sendall(pending)
            data = sock.recv(65536)
            if not data: raise ssl.SSLError("connection closed during the handshake")
            incoming.write(data)
    if outgoing.pending: sock.sendall(outgoing.read())
    tls.write(f"GET / HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode())
    sock.sendall(outgoing.read())
    response = b""
    done = False
    while not done:
        data = sock.recv(65536)
        if not data: break
        incoming.write(data)
        try:
            while chunk := tls.read(65536):  # b"" once the server's close_notify is read
                response += chunk
            done = True
        except ssl.SSLWantReadError:
            pass
        except ssl.SSLZeroReturnError:
            done = True
    print(response.split(b"\r\n\r\n", 1)[1].decode().strip())
except (ssl.SSLError, OSError) as e:
    print("refused:", e)
