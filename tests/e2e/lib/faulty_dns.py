#!/usr/bin/env python3
"""A faulty upstream DNS stand-in for tests/e2e/upstream_faults_test.sh: answers A questions
the way its mode says, the mode being re-read from MODE_FILE for every query received, so a
test switches it while it runs:

    faulty_dns.py LOG MODE_FILE SECONDS ADDR GOOD_IP WRONG_IP

  healthy     the right answer (GOOD_IP, TTL 60), over UDP and TCP
  blackhole   nothing, ever
  slow MS     the right answer (GOOD_IP, TTL 0) MS milliseconds after each query
  late MS     WRONG_IP (TTL 300) MS milliseconds after each query: if it were taken after the
              resolver gave up, or cached, the next answer for the name would show it
  flap        by the count of queries since the mode was set: two answered SERVFAIL, then
              two answered right (GOOD_IP, TTL 0), and so on
  tc          UDP: WRONG_IP (TTL 300) with TC=1; TCP: the right answer (TTL 0)
  tc-cut      UDP as tc; TCP: the length prefix of the right answer, half of it, then a close
  tc-silent   UDP as tc; TCP: reads the query and never answers (the connection stays open)
  garbage     two datagrams that are no DNS reply: 3 bytes, then the query's TXID and a
              question name that runs past the end
  mangled     the right TXID and question, GOOD_IP, then a second A record cut short
  oversize    UDP: 250 A records of WRONG_IP (TTL 300), over 4,000 bytes, TC=0, past the
              1,232 the resolver asked for; TCP: the right answer (TTL 0)
  servfail    RCODE SERVFAIL;  refused: RCODE REFUSED
  anything else, or no file: nothing ("sent NAME nothing-unknown-mode")
Every answer that is no fault has GOOD_IP; WRONG_IP only ever rides in a fault. TTL 0 on the
right answers of fault modes keeps them out of airlock's cache, so the test's next query for
the same name must come here again.

Listens on ADDR:53, UDP and TCP. LOG gets "ready" once it listens, one line per query
received ("udp NAME TYPE MODE", "tcp NAME TYPE MODE"), one per thing sent ("sent NAME WHAT"),
"udp unparsable N" / "tcp unparsable" for a query it cannot read, and "tcp closed" /
"tcp eof" / "tcp error E" when it closes a connection, the peer does, or it fails (a
connection idle for 30 s is closed). Stops by itself after SECONDS."""
import socket
import struct
import sys
import threading
import time

from dns_stub import Log, header, parse_query, recv_exact, serve

TYPES = {1: "A", 28: "AAAA", 65: "HTTPS"}





def a_record(ip, ttl, rdata=None):
    rdata = socket.inet_aton(ip) if rdata is None else rdata
    return b"\xc0\x0c" + struct.pack(">HHIH", 1, 1, ttl, len(rdata)) + rdata  # owner: the question's name


class Server:
    def __init__(self, log, mode_file, addr, good, wrong):
        self.log, self.mode_file, self.good, self.wrong = log, mode_file, good, wrong
        self.flap_lock = threading.Lock()
        self.last_mode, self.flap_count = None, 0
        self.udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.udp.bind((addr, 53))
        self.tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.tcp.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.tcp.bind((addr, 53))
        self.tcp.listen(16)

    def mode(self):
        """The mode now, as [word, args...], and this query's number (from 0) since it was
        read first; read per query, so the test can switch it."""
        try:
            with open(self.mode_file, encoding="utf-8") as f:
                words = f.read().split()
        except OSError:
            words = []
        words = words or ["unknown-mode"]
        with self.flap_lock:
            if words != self.last_mode:
                self.last_mode, self.flap_count = words, 0
            k = self.flap_count
            self.flap_count += 1
        return words, k

    def right(self, q, ttl):
        qid, flags, question = q[0], q[1], q[2]
        return header(qid, flags, an=1) + question + a_record(self.good, ttl)

    def rcode(self, q, code):
        return header(q[0], q[1], rcode=code) + q[2]

    def truncated(self, q):
        return header(q[0], q[1], an=1, tc=True) + q[2] + a_record(self.wrong, 300)

    # --- UDP ---------------------------------------------------------------------------

    def serve_udp(self):
        while True:
            packet, peer = self.udp.recvfrom(65535)
            q = parse_query(packet)
            if q is None:
                self.log(f"udp unparsable {len(packet)}")
                continue
            mode, k = self.mode()
            self.log(f"udp {q[3]} {TYPES.get(q[4], q[4])} {' '.join(mode)}")
            # A thread per query: a slow answer must not hold up the next query.
            threading.Thread(target=self.answer_udp, args=(q, peer, mode, k), daemon=True).start()

    def send(self, data, peer, name, what):
        self.udp.sendto(data, peer)
        self.log(f"sent {name} {what}")

    def answer_udp(self, q, peer, mode, k):
        qid, flags, question, name, qtype = q
        word = mode[0]
        if qtype != 1:
            self.send(self.rcode(q, 3), peer, name, "nxdomain")
        elif word == "healthy":
            self.send(self.right(q, 60), peer, name, "right")
        elif word == "blackhole":
            self.log(f"sent {name} nothing")
        elif word in ("slow", "late") and len(mode) == 2:
            time.sleep(int(mode[1]) / 1000)
            if word == "slow":
                self.send(self.right(q, 0), peer, name, f"right-after-{mode[1]}ms")
            else:
                self.send(header(qid, flags, an=1) + question + a_record(self.wrong, 300), peer, name,
                          f"wrong-after-{mode[1]}ms")
        elif word == "flap":
            if (k // 2) % 2 == 0:  # queries 0 and 1 fail, 2 and 3 are answered, ...
                self.send(self.rcode(q, 2), peer, name, "flap-servfail")
            else:
                self.send(self.right(q, 0), peer, name, "flap-right")
        elif word in ("tc", "tc-cut", "tc-silent"):
            self.send(self.truncated(q), peer, name, "wrong-truncated")
        elif word == "garbage":
            self.send(b"\x00\x01\x02", peer, name, "garbage-3-bytes")
            # The right TXID, QR, one question whose first label says 63 bytes and has 5.
            self.send(struct.pack(">HHHHHH", qid, 0x8180, 1, 1, 0, 0) + b"\x3fjunk", peer, name,
                      "garbage-runaway-name")
        elif word == "mangled":
            cut = b"\xc0\x0c" + struct.pack(">HHIH", 1, 1, 300, 4) + socket.inet_aton(self.wrong)[:2]
            self.send(header(qid, flags, an=2) + question + a_record(self.good, 300) + cut, peer, name,
                      "right-then-cut-record")
        elif word == "oversize":
            data = header(qid, flags, an=250) + question + a_record(self.wrong, 300) * 250
            self.send(data, peer, name, f"wrong-oversize-{len(data)}-bytes")
        elif word == "servfail":
            self.send(self.rcode(q, 2), peer, name, "servfail")
        elif word == "refused":
            self.send(self.rcode(q, 5), peer, name, "refused")
        else:
            self.log(f"sent {name} nothing-unknown-mode")

    # --- TCP ---------------------------------------------------------------------------

    def serve_tcp(self):
        while True:
            c, _ = self.tcp.accept()
            threading.Thread(target=self.tcp_connection, args=(c,), daemon=True).start()

    def tcp_connection(self, c):
        # Bounded: a connection nobody closes ends with the stand-in's own deadline at most.
        c.settimeout(30)
        try:
            while True:
                head = recv_exact(c, 2)
                packet = recv_exact(c, struct.unpack(">H", head)[0]) if head else None
                if packet is None:
                    self.log("tcp eof")
                    break
                q = parse_query(packet)
                if q is None:
                    self.log("tcp unparsable")
                    break
                mode, _ = self.mode()
                name = q[3]
                self.log(f"tcp {name} {TYPES.get(q[4], q[4])} {' '.join(mode)}")
                word = mode[0]
                if word == "tc-silent":
                    self.log(f"sent {name} tcp-nothing")
                    continue  # keeps reading: the connection stays open, unanswered
                data = self.right(q, 60 if word == "healthy" else 0) if q[4] == 1 else self.rcode(q, 3)
                framed = struct.pack(">H", len(data)) + data
                if word == "tc-cut":
                    c.sendall(framed[:len(framed) // 2])
                    self.log(f"sent {name} tcp-half-then-close")
                    c.shutdown(socket.SHUT_RDWR)
                    self.log("tcp closed")
                    break
                c.sendall(framed)
                self.log(f"sent {name} tcp-right")
        except OSError as e:
            self.log(f"tcp error {e.__class__.__name__}")
        c.close()


def main():
    log_path, mode_file, seconds, addr, good, wrong = sys.argv[1:7]
    log = Log(log_path)
    server = Server(log, mode_file, addr, good, wrong)
    serve(server, log, float(seconds))


if __name__ == "__main__":
    main()
