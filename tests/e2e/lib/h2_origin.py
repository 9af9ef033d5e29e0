#!/usr/bin/python3
"""An HTTP/2 origin that takes extended CONNECT (RFC 8441), which nginx does not: it
announces SETTINGS_ENABLE_CONNECT_PROTOCOL, answers a CONNECT with :protocol 200 and echoes
every DATA on that stream; any other request gets 200 and its method and path. Each request
is printed to stdout as "METHOD PATH" when it arrives. Python's h2
(Debian's python3-h2) over TLS with ALPN h2; one thread per connection, bounded in life.

    h2_origin.py ADDR CERT KEY SECONDS"""
import socket
import ssl
import sys
import threading
import time

import h2.config
import h2.connection
import h2.events
import h2.settings

addr, cert, key, seconds = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(cert, key)
ctx.set_alpn_protocols(["h2"])


def serve(s):
    conn = h2.connection.H2Connection(config=h2.config.H2Configuration(client_side=False, header_encoding="utf-8"))
    conn.local_settings = h2.settings.Settings(client=False,
                                              initial_values={h2.settings.SettingCodes.ENABLE_CONNECT_PROTOCOL: 1})
    conn.initiate_connection()
    s.sendall(conn.data_to_send())
    tunnels = set()
    while True:
        data = s.recv(65536)
        if not data:
            return
        for e in conn.receive_data(data):
            if isinstance(e, h2.events.RequestReceived):
                h = dict(e.headers)
                print(h.get(":method"), h.get(":path"), flush=True)
                if h.get(":method") == "CONNECT" and ":protocol" in h:
                    tunnels.add(e.stream_id)
                    conn.send_headers(e.stream_id, [(":status", "200")])
                else:
                    body = f"{h.get(':method')} {h.get(':path')}\n".encode()
                    conn.send_headers(e.stream_id, [(":status", "200"), ("content-length", str(len(body)))])
                    conn.send_data(e.stream_id, body, end_stream=True)
            elif isinstance(e, h2.events.DataReceived):
                conn.acknowledge_received_data(e.flow_controlled_length, e.stream_id)
                if e.stream_id in tunnels and e.data:
                    conn.send_data(e.stream_id, e.data)
            elif isinstance(e, h2.events.StreamEnded) and e.stream_id in tunnels:
                conn.end_stream(e.stream_id)
        s.sendall(conn.data_to_send())


listener = socket.socket()
listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
listener.bind((addr, 443))
listener.listen(16)
listener.settimeout(1)
end = time.monotonic() + seconds
while time.monotonic() < end:
    try:
        raw, _ = listener.accept()
    except socket.timeout:
        continue
    try:
        tls = ctx.wrap_socket(raw, server_side=True)
    except (ssl.SSLError, OSError):
        continue
    tls.settimeout(30)
    threading.Thread(target=serve, args=(tls,), daemon=True).start()
