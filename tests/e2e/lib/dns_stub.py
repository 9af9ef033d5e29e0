"""What the e2e tests' stand-in DNS servers share (hostile_dns.py, faulty_dns.py): a log
the test reads, a query's parse, a reply's header, and reading a TCP frame."""
import struct
import threading
import time


class Log:
    def __init__(self, path):
        self.f = open(path, "a", encoding="utf-8")
        self.lock = threading.Lock()

    def __call__(self, text):
        with self.lock:
            self.f.write(text + "\n")
            self.f.flush()


def encode_name(name):
    return b"".join(bytes([len(p)]) + p.encode() for p in name.rstrip(".").split(".")) + b"\x00"


def parse_query(packet):
    """(id, flags, question bytes, name, qtype) of a query, or None."""
    if len(packet) < 12:
        return None
    qid, flags, qd = struct.unpack(">HHH", packet[:6])
    if flags & 0x8000 or qd != 1:
        return None
    pos, labels = 12, []
    while True:
        if pos >= len(packet):
            return None
        n = packet[pos]
        if n == 0:
            pos += 1
            break
        if n > 63:
            return None  # a resolver's query is never compressed
        labels.append(packet[pos + 1:pos + 1 + n].decode(errors="replace"))
        pos += 1 + n
    if len(packet) < pos + 4:
        return None
    qtype = struct.unpack(">H", packet[pos:pos + 2])[0]
    return qid, flags, packet[12:pos + 4], ".".join(labels).lower(), qtype


def header(qid, flags, an=0, ns=0, ar=0, rcode=0, tc=False):
    # QR, AA, RD as asked, RA
    f = 0x8400 | (flags & 0x0100) | 0x0080 | rcode | (0x0200 if tc else 0)
    return struct.pack(">HHHHHH", qid, f, 1, an, ns, ar)


def recv_exact(c, n):
    data = b""
    while len(data) < n:
        more = c.recv(n - len(data))
        if not more:
            return None
        data += more
    return data


def serve(server, log, seconds):
    """Runs server.serve_udp and server.serve_tcp, says "ready", and stops after SECONDS."""
    threading.Thread(target=server.serve_udp, daemon=True).start()
    threading.Thread(target=server.serve_tcp, daemon=True).start()
    log("ready")
    time.sleep(seconds)
