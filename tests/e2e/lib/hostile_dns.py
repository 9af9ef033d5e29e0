#!/usr/bin/env python3
"""A hostile upstream DNS stand-in for end-to-end tests: answers each A question under
hostile.test by the name's first label, trying to slip a poison address past the resolver:

    hostile_dns.py LOG SECONDS ADDR OTHER_ADDR GOOD_IP POISON_IP

  good       the right answer (GOOD_IP)
  wrongid    the poison under another TXID first, then the right answer
  wrongport  the poison from ADDR:5353 first, then the right answer from ADDR:53
  wrongaddr  the poison from OTHER_ADDR:53 first, then the right answer
  otherq     the poison with the right TXID for another name, then for another type (AAAA),
             then the right answer
  extra      the right answer plus the poison for other names (answer and additional
             sections) and an NS record pointing at it
  tc         over UDP the poison with TC=1; over TCP the poison under another TXID, then
             the right answer, on the same connection
  slow       the poison, with the right TXID, 4.5 s after each query
  silent     nothing, ever
  malformed  right TXID: the poison, then a second answer record cut short
  loop       right TXID: the poison under an owner name that is a compression pointer to itself
  badlen     right TXID: the poison as an A record whose RDATA is 5 bytes long
  notreply   right TXID and question, the poison, but QR=0: a query, not a response
  anything else: NXDOMAIN

Listens on ADDR:53 (UDP and TCP); sends from ADDR:5353 and OTHER_ADDR:53 too. LOG gets one
line per query received ("udp NAME TYPE", "tcp NAME TYPE"), per answer sent ("sent NAME
WHAT"), per datagram from another port or address whether the gateway refused it with an ICMP
port unreachable ("gateway NAME refused": it arrived, and no socket there took it), and
"ready" once it listens. Stops by itself after SECONDS."""
import socket
import struct
import sys
import threading
import time

from dns_stub import Log, encode_name, header, parse_query, recv_exact, serve

ZONE = "hostile.test"
TTL = 300
TYPES = {1: "A", 2: "NS", 5: "CNAME", 6: "SOA", 16: "TXT", 28: "AAAA", 65: "HTTPS"}





def a_record(owner, ip, rdata=None):
    rdata = socket.inet_aton(ip) if rdata is None else rdata
    return owner + struct.pack(">HHIH", 1, 1, TTL, len(rdata)) + rdata


PTR_QNAME = b"\xc0\x0c"  # the question's name


def answer(qid, flags, question, ip):
    return header(qid, flags, an=1) + question + a_record(PTR_QNAME, ip)


def question_for(name, qtype):
    return encode_name(name) + struct.pack(">HH", qtype, 1)


class Server:
    def __init__(self, log, addr, other_addr, good, poison):
        self.log, self.good, self.poison = log, good, poison
        self.main = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.main.bind((addr, 53))
        self.other_port = (addr, 5353)
        self.other_addr = (other_addr, 53)
        self.tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.tcp.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.tcp.bind((addr, 53))
        self.tcp.listen(16)

    # --- UDP ---------------------------------------------------------------------------

    def serve_udp(self):
        while True:
            packet, peer = self.main.recvfrom(65535)
            q = parse_query(packet)
            if q is None:
                self.log(f"udp unparsable {len(packet)} bytes")
                continue
            self.log(f"udp {q[3]} {TYPES.get(q[4], q[4])}")
            threading.Thread(target=self.answer_udp, args=(q, peer), daemon=True).start()

    def send(self, sock, data, peer, name, what):
        sock.sendto(data, peer)
        self.log(f"sent {name} {what}")

    def send_from(self, local, data, peer, name, what):
        """Sends from another socket, connected to the peer: the gateway's ICMP port
        unreachable, if it sends one, is then read back as ECONNREFUSED (see gateway_said)."""
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(local)
        s.connect(peer)
        s.send(data)
        self.log(f"sent {name} {what}")
        return s

    def gateway_said(self, s, name):
        """Logs whether the gateway refused the datagram sent on s (no socket there took it)."""
        s.settimeout(0.5)
        try:
            s.recv(512)
            self.log(f"gateway {name} answered")
        except ConnectionRefusedError:
            self.log(f"gateway {name} refused")
        except socket.timeout:
            self.log(f"gateway {name} silent")
        s.close()

    def answer_udp(self, q, peer):
        qid, flags, question, name, qtype = q
        label = name[:-len(ZONE) - 1] if name.endswith("." + ZONE) else None
        main, good, poison = self.main, self.good, self.poison
        right = answer(qid, flags, question, good)
        if label is None or qtype != 1 or label not in (
                "good", "wrongid", "wrongport", "wrongaddr", "otherq", "extra", "tc", "slow", "silent",
                "malformed", "loop", "badlen", "notreply"):
            self.send(main, header(qid, flags, rcode=3) + question, peer, name, "nxdomain")
            return
        if label == "good":
            self.send(main, right, peer, name, "right")
        elif label == "wrongid":
            self.send(main, answer(qid ^ 0x5A5A, flags, question, poison), peer, name, "poison-wrong-txid")
            time.sleep(0.05)
            self.send(main, right, peer, name, "right")
        elif label == "wrongport":
            s = self.send_from(self.other_port, answer(qid, flags, question, poison), peer, name, "poison-wrong-port")
            time.sleep(0.05)
            self.send(main, right, peer, name, "right")
            self.gateway_said(s, name)
        elif label == "wrongaddr":
            s = self.send_from(self.other_addr, answer(qid, flags, question, poison), peer, name,
                               "poison-wrong-address")
            time.sleep(0.05)
            self.send(main, right, peer, name, "right")
            self.gateway_said(s, name)
        elif label == "otherq":
            other = question_for("good." + ZONE, 1)
            self.send(main, answer(qid, flags, other, poison), peer, name, "poison-other-name")
            aaaa = question_for(name, 28)
            self.send(main, answer(qid, flags, aaaa, poison), peer, name, "poison-other-type")
            time.sleep(0.05)
            self.send(main, right, peer, name, "right")
        elif label == "extra":
            victim = encode_name("victim." + ZONE)
            ns_name = encode_name("ns." + ZONE)
            body = (a_record(PTR_QNAME, good) + a_record(victim, poison)
                    + encode_name(ZONE) + struct.pack(">HHIH", 2, 1, TTL, len(ns_name)) + ns_name
                    + a_record(ns_name, poison))
            self.send(main, header(qid, flags, an=2, ns=1, ar=1) + question + body, peer, name,
                      "right-with-poison-beside")
        elif label == "tc":
            self.send(main, header(qid, flags, an=1, tc=True) + question + a_record(PTR_QNAME, poison), peer,
                      name, "poison-truncated")
        elif label == "slow":
            time.sleep(4.5)
            self.send(main, answer(qid, flags, question, poison), peer, name, "poison-late")
        elif label == "silent":
            self.log(f"sent {name} nothing")
        elif label == "malformed":
            cut = PTR_QNAME + struct.pack(">HHIH", 1, 1, TTL, 4) + socket.inet_aton(poison)[:2]
            self.send(main, header(qid, flags, an=2) + question + a_record(PTR_QNAME, poison) + cut, peer, name,
                      "poison-then-cut-record")
        elif label == "loop":
            # The record's owner is a pointer to its own offset.
            here = 12 + len(question)
            owner = struct.pack(">H", 0xC000 | here)
            self.send(main, header(qid, flags, an=1) + question + a_record(owner, poison), peer, name,
                      "poison-pointer-loop")
        elif label == "badlen":
            self.send(main, header(qid, flags, an=1) + question
                      + a_record(PTR_QNAME, poison, socket.inet_aton(poison) + b"\x00"), peer, name,
                      "poison-rdlength-5")
        elif label == "notreply":
            packet = bytearray(answer(qid, flags, question, poison))
            packet[2] &= 0x7F  # QR off
            self.send(main, bytes(packet), peer, name, "poison-without-qr")

    # --- TCP ---------------------------------------------------------------------------

    def serve_tcp(self):
        while True:
            c, _ = self.tcp.accept()
            threading.Thread(target=self.tcp_connection, args=(c,), daemon=True).start()

    def tcp_connection(self, c):
        c.settimeout(10)
        try:
            while True:
                head = recv_exact(c, 2)
                if head is None:
                    break
                packet = recv_exact(c, struct.unpack(">H", head)[0])
                if packet is None:
                    break
                q = parse_query(packet)
                if q is None:
                    self.log("tcp unparsable")
                    break
                qid, flags, question, name, qtype = q
                self.log(f"tcp {name} {TYPES.get(qtype, qtype)}")
                if name == "tc." + ZONE and qtype == 1:
                    for data, what in ((answer(qid ^ 0x5A5A, flags, question, self.poison), "poison-wrong-txid"),
                                       (answer(qid, flags, question, self.good), "right")):
                        c.sendall(struct.pack(">H", len(data)) + data)
                        self.log(f"sent {name} tcp-{what}")
                else:
                    data = header(qid, flags, rcode=3) + question
                    c.sendall(struct.pack(">H", len(data)) + data)
                    self.log(f"sent {name} tcp-nxdomain")
        except OSError:
            pass
        c.close()


def main():
    log_path, seconds, addr, other_addr, good, poison = sys.argv[1:7]
    log = Log(log_path)
    server = Server(log, addr, other_addr, good, poison)
    serve(server, log, float(seconds))


if __name__ == "__main__":
    main()
