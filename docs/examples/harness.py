#!/usr/bin/env python3
"""One agent tool call under airlock, through its control API (docs/agent-harness.md).

    harness.py --session ID [--control PATH] [--tool-call ID] [--label K=V]...
               [--grant HOST[:PORT]] -- CMD [ARG...]

Sets the session's tool call, optionally grants one target for this tool call alone, runs
CMD, and prints each denial of the session meanwhile as one line meant for the model
(stdout, prefixed "airlock: "). Then it ends the tool call, which ends its grants, and lists
the grants the session still holds (stderr). Exits with CMD's status; 2 when the daemon
refuses a call or cannot be reached. Python 3 standard library only.
"""
import argparse
import http.client
import json
import socket
import subprocess
import sys
import threading
import time
import urllib.parse
import uuid

# The daemon sends a lone newline after 10 s without a decision: three missing in a row
# means it is gone, even when the socket never says so.
STREAM_SILENCE = 30.0
# A denial's line leaves the daemon as the client is refused, not before it: CMD can exit
# before the line is read here, so this long is left for the last lines to arrive.
LATE_LINES = 0.5

# What the model is told per reason; the reason code stays in the line as well.
REASONS = {
    "host_not_allowed": "this host is not on the sandbox's allow list; a person may grant it",
    "port_not_allowed": "this host is allowed, but not on this port",
    "host_denied": "a deny rule forbids this host; do not retry it or look for a way around it",
    "private_address": "it leads to a private, loopback or cloud-metadata address, which the sandbox never reaches",
    "protocol_not_allowed": "the host and port are allowed, but not what the program spoke there",
    "no_name": "the connection named no host and went to an address no DNS answer gave; connect by host name",
    "path_not_allowed": "the host is allowed for some paths only, and not this one",
    "limit_exceeded": "a budget of the sandbox is spent (see notes); slow down or stop",
    "grant_ended": "the connection was cut because the temporary permission it used ended",
}


class Refused(Exception):
    """The daemon said no, or could not be asked."""


class UnixHTTPConnection(http.client.HTTPConnection):
    """HTTP/1.1 on the control socket: "airlock" is only the Host header's name."""

    def __init__(self, socket_path, timeout=10.0):
        super().__init__("airlock", timeout=timeout)
        self.socket_path = socket_path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)  # close() closes it, connected or not
        self.sock.settimeout(self.timeout)
        self.sock.connect(self.socket_path)


def error_of(status, body):
    try:
        return json.loads(body)["error"]
    except (ValueError, KeyError, TypeError):
        return body.decode(errors="replace").strip() or f"status {status}"


def call(control, method, path, body=None):
    """One request on a connection of its own (the daemon closes a kept-alive connection that
    stays idle for 10 s, which the model's thinking easily outlasts). Returns the JSON answer."""
    conn = UnixHTTPConnection(control)
    try:
        data = None if body is None else json.dumps(body)
        conn.request(method, path, body=data, headers={"Content-Type": "application/json"} if data else {})
        resp = conn.getresponse()
        text = resp.read()
    except (OSError, http.client.HTTPException) as e:
        raise Refused(f"{method} {path}: cannot talk to the daemon at {control}: {e}") from None
    finally:
        conn.close()
    if resp.status >= 300:
        raise Refused(f"{method} {path}: {resp.status}: {error_of(resp.status, text)}")
    return json.loads(text) if text.strip() else {}


def message(d):
    """One line for the model from one decision line (docs/decision-log.md)."""
    name, dst, event = d.get("name"), d.get("dst"), d.get("event")
    target = name or dst or "an unnamed destination"
    if event == "dns":
        what = f"the DNS lookup of {target}"
    elif event == "http":
        what = f"the request {d.get('method')} {d.get('path')} to {target}"
    elif event == "close":
        what = f"an open connection to {target}"
    else:
        what = f"a connection to {target}" + (f" ({dst})" if name and dst else "")
    # audit-deny: a policy in audit mode let it through; the model should know it will not be so later.
    outcome = "was blocked" if d.get("verdict") == "deny" else "was let through in audit mode, but is not allowed"
    reason = d.get("reason")
    extra = f"rule {d.get('rule')}" + "".join(f", {n}" for n in d.get("notes") or [])
    return f"airlock: {what} {outcome}: {reason}: {REASONS.get(reason, 'denied by the policy')} ({extra})"


class DenialWatcher(threading.Thread):
    """Reads GET /v1/decisions?session=ID&deny=1 and prints the tool call's denials."""

    def __init__(self, control, session, tool_call):
        super().__init__(daemon=True)
        self.tool_call, self.stopping = tool_call, False
        query = urllib.parse.urlencode({"session": session, "deny": "1"})
        conn = UnixHTTPConnection(control, timeout=STREAM_SILENCE)
        try:
            conn.request("GET", "/v1/decisions?" + query)
            self.sock = conn.sock  # kept: the response holds the socket, the connection lets go of it
            self.resp = conn.getresponse()
        except (OSError, http.client.HTTPException) as e:
            conn.close()
            raise Refused(f"GET /v1/decisions: cannot talk to the daemon at {control}: {e}") from None
        if self.resp.status != 200:  # 503: 16 streams are open already
            body = self.resp.read()
            conn.close()
            raise Refused(f"GET /v1/decisions: {self.resp.status}: {error_of(self.resp.status, body)}")
        # The daemon subscribed before it sent the head: from here on, no decision is missed.

    def run(self):
        seen = set()
        try:
            while True:
                # http.client undoes the chunking; the daemon's chunks hold whole lines.
                line = self.resp.readline()
                if not line:
                    if not self.stopping:
                        print("harness: the daemon ended the decision stream", file=sys.stderr)
                    return
                if not line.strip():
                    continue  # a heartbeat
                d = json.loads(line)
                if d.get("event") == "tail_dropped":
                    print(f"harness: {d.get('lines')} decisions lost (read too slowly); "
                          "airlock explain has them all", file=sys.stderr)
                    continue
                # The stream is the session's: another tool call's lines, and events that are
                # no decision about traffic, are not this model's business.
                if d.get("event") not in ("dns", "connect", "http", "close") or d.get("tool_call") != self.tool_call:
                    continue
                # A denied name usually shows twice (its lookup, then a connection): say it once.
                key = (d.get("reason"), d.get("name") or d.get("dst"))
                if key not in seen:
                    seen.add(key)
                    print(message(d), flush=True)
        except (OSError, ValueError, http.client.HTTPException) as e:
            if not self.stopping:
                print(f"harness: the decision stream broke: {e}", file=sys.stderr)

    def stop(self):
        self.stopping = True
        try:
            self.sock.shutdown(socket.SHUT_RDWR)  # wakes the blocked readline; the daemon drops the stream
        except OSError:
            pass
        self.join(timeout=2)
        self.resp.close()


def parse_args():
    argv = sys.argv[1:]
    cut = argv.index("--") if "--" in argv else len(argv)
    p = argparse.ArgumentParser(
        usage="%(prog)s --session ID [options] -- CMD [ARG...]",
        description="Run CMD as one tool call of an airlock session, printing its denials for the model.")
    p.add_argument("--control", default="/run/airlock/control.sock", metavar="PATH",
                   help="the daemon's control socket (default %(default)s)")
    p.add_argument("--session", required=True, metavar="ID", help="a session that exists (airlock run --session ID)")
    p.add_argument("--tool-call", metavar="ID", help="the tool call's id in the log (default: a fresh one)")
    p.add_argument("--label", action="append", default=[], metavar="K=V", help="a label to set (repeatable)")
    p.add_argument("--grant", metavar="HOST[:PORT]", help="let this tool call reach HOST (ports 80 and 443 by default)")
    args = p.parse_args(argv[:cut])
    args.command = argv[cut + 1:]
    if not args.command:
        p.error("a command is needed after --")
    if any("=" not in kv for kv in args.label):
        p.error("--label: expected K=V")
    return args


def main():
    args = parse_args()
    session = urllib.parse.quote(args.session, safe="")
    tool_call = args.tool_call or "call-" + uuid.uuid4().hex[:8]
    labels = dict(kv.split("=", 1) for kv in args.label)

    # Opened first, so a refusal (503) leaves nothing to undo.
    watcher = DenialWatcher(args.control, args.session, tool_call)
    watcher.start()
    try:
        call(args.control, "PUT", f"/v1/sessions/{session}/context", {"tool_call": tool_call, "labels": labels})
    except Refused:
        watcher.stop()
        raise
    try:
        if args.grant:
            g = call(args.control, "POST", f"/v1/sessions/{session}/grants",
                     {"allow": args.grant, "tool_call": True, "by": "harness.py"})
            print(f"harness: grant {g['id']}: {g['allow']} until tool call {tool_call} ends", file=sys.stderr)
        try:
            status = subprocess.run(args.command).returncode
        except OSError as e:
            print(f"harness: cannot run {args.command[0]}: {e}", file=sys.stderr)
            status = 127
        time.sleep(LATE_LINES)
    finally:
        watcher.stop()
        # Always, also after a failed grant or Ctrl-C: a tool call left open keeps its grants.
        call(args.control, "PUT", f"/v1/sessions/{session}/context", {"tool_call": None})
    left = call(args.control, "GET", f"/v1/sessions/{session}/grants")["grants"]
    for g in left:  # none of this tool call's: grants of other scopes (for, connections) stay
        print(f"harness: grant {g['id']} left: {g['allow']} (tool_call {g['tool_call']}, expires_in_ms "
              f"{g['expires_in_ms']}, connections_left {g['connections_left']})", file=sys.stderr)
    print(f"harness: tool call {tool_call} ended; {len(left)} grants left", file=sys.stderr)
    # A signal's death is 128 + its number, as a shell says it.
    return status if status >= 0 else 128 - status


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Refused as e:
        print(f"harness: {e}", file=sys.stderr)
        sys.exit(2)
    except KeyboardInterrupt:
        sys.exit(130)  # the tool call was ended on the way out
