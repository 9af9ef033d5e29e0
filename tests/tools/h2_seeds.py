#!/usr/bin/python3
"""Writes the seed corpus of tests/fuzz/fuzz_h2_bridge.cpp: whole HTTP/2 exchanges, made
with Python's h2 (Debian's python3-h2), in the fuzz target's input format (chunks of
[side][length, 2 bytes][bytes]; side 0 the sandbox, 1 the origin).

    tests/tools/h2_seeds.py tests/fuzz/corpus/h2_bridge"""
import struct
import sys

import h2.config
import h2.connection

out = sys.argv[1]
SECRET = "Bearer fuzz-secret-0123456789abcdef"


def chunk(side, data):
    res = b""
    for i in range(0, len(data), 65535):
        part = data[i:i + 65535]
        res += bytes([side]) + struct.pack(">H", len(part)) + part
    return res


def client(validate=True):
    c = h2.connection.H2Connection(config=h2.config.H2Configuration(
        client_side=True, header_encoding="utf-8", validate_outbound_headers=validate))
    c.initiate_connection()
    return c


def server(*requests):
    """The origin, having read `requests` (as airlock would send them) on streams 1, 3, ..."""
    s = h2.connection.H2Connection(config=h2.config.H2Configuration(client_side=False, header_encoding="utf-8"))
    s.initiate_connection()
    asker = client()
    for i, r in enumerate(requests):
        asker.send_headers(1 + 2 * i, r, end_stream=True)
    s.receive_data(asker.data_to_send())
    return s


def req(path, authority="a.test", method="GET"):
    return [(":method", method), (":path", path), (":authority", authority), (":scheme", "https")]


def write(name, data):
    with open(f"{out}/{name}", "wb") as f:
        f.write(data)


# A GET allowed, answered 200 with a body.
c = client()
c.send_headers(1, req("/ok"), end_stream=True)
s = server(req("/ok"))
s.send_headers(1, [(":status", "200"), ("content-type", "text/plain")])
s.send_data(1, b"hello", end_stream=True)
write("get_ok", chunk(0, c.data_to_send()) + chunk(1, s.data_to_send()))

# A POST with a body; the origin echoes the credential in a header, the body (split across
# frames) and a trailer.
c = client()
c.send_headers(1, req("/ok/upload", method="POST"))
c.send_data(1, b"x" * 1000, end_stream=True)
s = server(req("/ok/upload", method="POST"))
s.send_headers(1, [(":status", "200"), ("x-echo", SECRET)])
s.send_data(1, b"you sent: " + SECRET[:20].encode())
s.send_data(1, SECRET[20:].encode())
s.send_headers(1, [("x-trailer", SECRET)], end_stream=True)
write("post_echo", chunk(0, c.data_to_send()) + chunk(1, s.data_to_send()))

# Three streams on one connection: allowed, a forbidden path, another host.
c = client()
c.send_headers(1, req("/ok"), end_stream=True)
c.send_headers(3, req("/forbidden"), end_stream=True)
c.send_headers(5, req("/ok", authority="b.test"), end_stream=True)
s = server(req("/ok"))
s.send_headers(1, [(":status", "302"), ("location", "https://c.test/elsewhere")], end_stream=True)
write("three_streams", chunk(0, c.data_to_send()) + chunk(1, s.data_to_send()))

# A stream reset by the sandbox while its response comes.
c = client()
c.send_headers(1, req("/ok"), end_stream=True)
first = c.data_to_send()
c.reset_stream(1)
s = server(req("/ok"))
s.send_headers(1, [(":status", "200")])
s.send_data(1, b"partial")
write("reset", chunk(0, first) + chunk(1, s.data_to_send()) + chunk(0, c.data_to_send()))

# A request with trailers from the sandbox (gRPC's shape the other way): its second header
# block is no request.
c = client()
c.send_headers(1, req("/ok/upload", method="POST"))
c.send_data(1, b"x" * 100)
c.send_headers(1, [("x-trailer", "done")], end_stream=True)
s = server(req("/ok/upload", method="POST"))
s.send_headers(1, [(":status", "200")], end_stream=True)
write("trailers_to_origin", chunk(0, c.data_to_send()) + chunk(1, s.data_to_send()))

# A Host field: in place of :authority, and beside it naming another host (which h2 itself
# would not send).
c = client(validate=False)
c.send_headers(1, [(":method", "GET"), (":path", "/ok"), (":scheme", "https"), ("host", "a.test")], end_stream=True)
c.send_headers(3, req("/ok") + [("host", "b.test")], end_stream=True)
s = server(req("/ok"))
s.send_headers(1, [(":status", "200")], end_stream=True)
write("host_field", chunk(0, c.data_to_send()) + chunk(1, s.data_to_send()))
