// The subcommand table: names, one-line summaries and full --help texts.
#include "app/cli.hpp"

namespace airlock::app {

int run_daemon_command(args a);
int run_check_command(args a);
int run_test_command(args a);
int run_ca_command(args a);
int run_nft_rules_command(args a);
int run_explain_command(args a);
int run_tail_command(args a);
int run_grant_command(args a);
int run_approve_command(args a);
int run_suggest_command(args a);
int run_run_command(args a);
int run_gc_command(args a);
int run_attach_command(args a);
int run_detach_command(args a);

namespace {

constexpr std::string_view daemon_help = R"(Usage: airlock daemon [-c FILE] [--log FILE]

Runs the transparent proxy and the filtering DNS server until SIGINT or SIGTERM.
SIGHUP reloads the policy file (a file with errors keeps the running policy and
prints the errors) and reopens the decision log for rotation.

Options:
  -c, --config FILE   policy file (YAML version 1); default: the embedded default
                      policy (see 'airlock check --print-default')
      --log FILE      decision log (JSON Lines), '-' for stdout; overrides log.decisions
  -h, --help          this text

Exit status: 0 after a clean shutdown, 1 when a listener or the log cannot be opened,
2 when the configuration has errors (printed as FILE:LINE:COL: message).
)";

constexpr std::string_view check_help = R"(Usage: airlock check [-c FILE] [--print-default]

Validates a policy file. Prints every error as FILE:LINE:COL: message and exits 2,
or prints a one-line summary and exits 0.

Options:
  -c, --config FILE   the file to check; default: the embedded default policy
      --print-default print the embedded default policy (YAML) and exit
  -h, --help          this text
)";

constexpr std::string_view test_help =
    R"(Usage: airlock test [-c FILE] --policy NAME [--speaks tls|http|opaque] HOST[:PORT]

Prints the decision the policy NAME makes for a connection to HOST on PORT
(default 443): 'allow' or 'deny', the reason code and the rule (FILE:LINE or
'default'), and for an allow what the rule lets be spoken on that port
(protocol=tls: a TLS hello naming the host; http: a request naming it; any: any
bytes). HOST may be a name or an IP address ([V6]:PORT for IPv6 with a port).
Names that resolve to private addresses are judged at connection time, not here.

Options:
  -c, --config FILE   policy file; default: the embedded default policy
      --policy NAME   the policy to ask (required)
      --speaks KIND   judge a connection whose first bytes are KIND: tls or http
                      naming HOST, or opaque (anything else, a TLS hello without a
                      server name included); denied protocol_not_allowed when the
                      port does not carry it
  -h, --help          this text

Exit status: 0 allow, 1 deny, 2 error.
)";

constexpr std::string_view ca_help = R"(Usage: airlock ca init DIR

Creates a local certificate authority for TLS inspection in DIR: ca.crt (ECDSA P-256,
10 years, give it to sandboxes to trust) and ca.key (mode 0600, never leaves DIR).
Refuses to overwrite an existing CA.

Options:
  -h, --help          this text
)";

constexpr std::string_view nft_rules_help =
    R"(Usage: airlock nft-rules --iface IFACE [--proxy-port N] [--https-port N] [--dns-port N] [--table NAME] [--tproxy]
       airlock nft-rules --sidecar --uid UID [--proxy-port N] [--https-port N] [--dns-port N] [--table NAME]

Prints the nftables ruleset (for 'nft -f -') that makes this host the gateway for a
sandbox behind IFACE: TCP is redirected to airlock's proxy, DNS (UDP and TCP 53) to
airlock's DNS server, and everything else from IFACE is dropped: no forwarding, no
other local port, no ICMP, no IPv6 beyond what is redirected.

With --sidecar, the ruleset for a network namespace airlock shares with its workload
(a pod): every process's own TCP and DNS but airlock's (uid UID) go to airlock, and
everything else they send out is dropped (UDP and QUIC, ICMP, other protocols; IPv4 and
IPv6). Loopback stays open inside the namespace, and replies to connections that came in
go out. Run airlock as a uid of its own, with listen.proxy and listen.dns on loopback
(127.0.0.1 and [::1]), where REDIRECT in the output hook sends.
The table is one atomic unit: 'nft delete table inet NAME' removes it.

Options:
      --iface IFACE     the gateway-side interface the sandbox's traffic arrives on
      --sidecar         the sidecar's table instead of a gateway's
      --uid UID         with --sidecar: the uid (or user name) airlock runs as
      --proxy-port N    airlock's transparent proxy port (default 15001)
      --https-port N    TCP to port 443 goes to this port instead: a second listen.proxy
                        entry of the daemon. Keeps :443's connections apart from the other
                        ports' after NAT, so a client's new HTTPS connection never meets
                        TIME_WAIT left by its plain-HTTP ones (which costs it a resent SYN,
                        10-20 ms). Recommended; REDIRECT only.
      --dns-port N      airlock's DNS port (default 15053)
      --table NAME      nft table name (default airlock_IFACE, or airlock_sidecar)
      --tproxy          TCP by TPROXY instead of REDIRECT (no NAT; the destination is
                        kept), to airlock's listen.tproxy port given as --proxy-port;
                        the text starts with the policy routing it needs (ip rule/route)
  -h, --help            this text
)";

constexpr std::string_view explain_help = R"(Usage: airlock explain [--log FILE] [--json] SESSION

Tells what session SESSION did, from the decision log, as a tree: each DNS query with
its answers, each connection under the DNS query whose answer it went to (a connection
without SNI or Host takes its name from there), each decision with its verdict, reason
and rule, the process that made it ('npm install -> sh -> node -> curl') when the log
has it, the session's open and close, the totals, and a list of every denial.
Denials are marked DENY (AUDIT-DENY: denied, but let through in audit mode); colour
only on a terminal, and never with NO_COLOR set.
The log is streamed; only SESSION's lines are kept. Lines that are not JSON are
skipped and counted.

Options:
      --log FILE      the decision log to read, '-' for stdin;
                      default: /var/log/airlock/decisions.jsonl
      --json          print the same tree as one JSON document (each step carries its
                      log line as written)
  -h, --help          this text

Exit status: 0 when the session has lines in the log, 1 when it has none, 2 for bad
arguments or a log that cannot be read.
)";

constexpr std::string_view tail_help = R"(Usage: airlock tail [--session ID] [--deny] [--json] [--control PATH]

Prints the running daemon's decisions as they are made, until interrupted: one line
each, the time and the session first, then the step as 'airlock explain' shows it
(verdict, reason, rule, process, tool call). Denials are marked DENY (AUDIT-DENY in
audit mode); colour only on a terminal, and never with NO_COLOR set. A reader slower
than the decisions loses lines; how many is said on stderr, where they were lost.

Options:
      --session ID    only this session's lines
      --deny          only denials (deny and audit-deny; a connection cut by a budget too)
      --json          each decision's log line as written (the decision log's format)
      --control PATH  the daemon's control socket (default /run/airlock/control.sock)
  -h, --help          this text

Exit status: 0 when the output was closed (a pager quit), 1 when the daemon cannot be
reached or ends the stream (it stopped), 2 for bad arguments.
)";

constexpr std::string_view grant_help =
    R"(Usage: airlock grant [--control PATH] SESSION ALLOW SCOPE... [--no-cut] [--by TEXT] [--json]
       airlock grant [--control PATH] --list SESSION [--json]
       airlock grant [--control PATH] --revoke GRANT SESSION [--json]

Lets session SESSION of the running daemon reach what its policy does not allow, for a
bounded scope, and says so in the decision log: every connection the grant allows is
logged 'grant_allowed' with rule 'grant:ID'. ALLOW is HOST[:PORT], *.SUFFIX[:PORT]
(subdomains, never the suffix itself) or family:NAME (a service family's hosts);
without a port, 80 and 443, each carrying its usual protocol. A grant never overrides a
deny rule, never reaches a private, loopback or metadata address, and never changes what
inspection judges. With --list, prints the session's live grants; with --revoke, ends one.

Scope (at least one; with several, the first to run out ends the grant):
      --tool-call       until the session's current tool call ends (one must be set)
      --for DURATION    for that long: 90s, 10m, 1h
      --connections N   for N connections
      --for-session     until the session ends

Options:
      --no-cut          leave the grant's open connections alone when it ends (by
                        default they are cut, each with a 'grant_ended' line)
      --by TEXT         who asked, written in the grant's log lines
      --list            print SESSION's live grants
      --revoke GRANT    end grant GRANT (e.g. g4) of SESSION, cutting its connections
      --json            print the daemon's answer as JSON
      --control PATH    the daemon's control socket (default /run/airlock/control.sock)
  -h, --help            this text

Exit status: 0 done, 1 when the daemon refused (its reason is printed) or cannot be
reached, 2 for bad arguments.
)";

constexpr std::string_view approve_help =
    R"(Usage: airlock approve [--session ID] [--by NAME] [--exec COMMAND] [--json] [--control PATH]

Answers the running daemon's approval questions until interrupted. A policy with
'approval: {wait: DURATION}' holds a DNS query or connection that its rules deny for want
of a rule (host_not_allowed, port_not_allowed) for up to that long, while an approver
decides; 'airlock approve' is one (so is any program reading GET /v1/approvals on the
control socket). Only while an approver watches a session are its denials held; with
none, they stand at once. The held client sees only a delay.

Each question shows who wants what (host and port, or a DNS lookup), in which tool call,
the process, and the denial as 'airlock tail' shows it; the answer is one of
  o  allow once: a grant of this host (and port) for one connection within a minute
  s  allow for the session: a grant of this host (and port) until the session ends
  d  deny (also an empty line): the denial stands now
Answers are read from stdin, a terminal or a pipe of scripted answers; at its end
'airlock approve' stops. Without an answer in time the denial stands. Every answer is
in the decision log: the held line's notes (answer:KIND, answer_by:NAME) and the grant's
line (approval:ID).

Options:
      --session ID     only this session's questions
      --by NAME        who is answering, written in the log (default: $SUDO_USER, $USER)
      --exec COMMAND   answer by running COMMAND (with /bin/sh) for each question: it
                       reads the question's JSON line on stdin (AIRLOCK_APPROVAL_ID,
                       AIRLOCK_SESSION, AIRLOCK_NAME, AIRLOCK_PORT in its environment)
                       and prints allow-once, allow-session or deny; failing, or saying
                       anything else, is a deny; still running when the time is up, it is
                       killed and the denial stands
      --json           print each question's line and each answer's reply as JSON
      --control PATH   the daemon's control socket (default /run/airlock/control.sock)
  -h, --help           this text

Exit status: 0 when stdin ends, 1 when the daemon cannot be reached or ends the stream
(it stopped), 2 for bad arguments.
)";

constexpr std::string_view suggest_help = R"(Usage: airlock suggest [--log FILE] SESSION

Prints, as YAML for a person to review, the smallest policy that would have allowed
what session SESSION did: every name it asked for or connected to, allowed or denied
(run the session in audit mode to see everything it needs). Service families replace
their hosts ('include: [npm]'); three or more names under one registrable-looking
suffix become '*.suffix' (said in a comment); ports are listed when not 80 and 443.
Each entry's comment names the process and when it was first seen.
Never suggested, and listed in a closing comment with the reason: names that resolve
to private addresses, invalid names, the DoH canary, public DNS resolvers, names a
deny rule denies, and connections without a name.
Nothing is applied. The output is a 'policies:' block; with 'version: 1' in front it is
a configuration 'airlock check -c FILE' accepts.

Options:
      --log FILE      the decision log to read, '-' for stdin;
                      default: /var/log/airlock/decisions.jsonl
  -h, --help          this text

Exit status: 0 when the session has lines in the log, 1 when it has none, 2 for bad
arguments or a log that cannot be read.
)";

constexpr std::string_view run_help = R"(Usage: airlock run [OPTIONS] -- CMD [ARG...]

Runs CMD in a fresh sandbox whose only way to the network is airlock: its own network
namespace behind a veth pair, the gateway's nft table sending DNS to airlock's DNS server
and every TCP connection to its proxy, everything else dropped (no forwarding, no other
port of this host, no IPv6: it is disabled inside). Registers a session with the daemon
on --control, or, when none answers there, starts an embedded daemon for this sandbox
alone (and says so). CMD runs under bubblewrap: the system read-only, private /tmp and
/run, an empty $HOME, the working directory read-write, no host sockets, a new PID
namespace, no capabilities, and only allowlisted environment variables (PATH, HOME,
USER, LOGNAME, SHELL, LANG, LANGUAGE, LC_*, TERM, COLORTERM, TZ, NO_COLOR).
CMD owns stdout; airlock's lines (the session id, then a summary with 'airlock explain
ID') go to stderr. Everything outside --rw directories is gone when CMD ends; so are
the namespace, the veth, the nft table and the cgroups, also when CMD is killed.
Ctrl-C, SIGTERM, SIGHUP and SIGQUIT are passed on to CMD; a second one kills it.

Without root, airlock run asks the daemon's sandbox socket (listen.sandbox in its config;
the caller must be in the group that owns it, usually airlock): the daemon makes the
sandbox, and CMD runs as the calling user, never as root. The working directory and
--ro/--rw paths must be ones the caller can open; -c, --log, --control, --pool,
--state-dir and --copy-cwd are root's alone (the daemon's settings apply). Under sudo,
CMD runs as the user who called sudo (SUDO_UID, with that user's groups and HOME), not as
root; only a root login runs CMD as root.

Session:
  -c, --config FILE   policy file for an embedded daemon (a running daemon keeps its own)
      --control PATH  the daemon's control socket (default /run/airlock/control.sock)
      --sandbox-socket PATH  without root: the daemon's sandbox socket
                      (default /run/airlock/sandbox.sock)
      --log FILE      decision log of an embedded daemon (default: the config's)
      --policy NAME   the policy for this sandbox (default: the daemon's default policy)
      --allow HOST[:PORT]  also allow HOST (repeatable)
      --session ID    the session id (default: the daemon picks one)
      --label K=V     a label on the session and its log lines (repeatable)
Filesystem:
      --rw DIR        share DIR read-write (repeatable)
      --ro DIR        share DIR read-only, e.g. --ro ~/.gitconfig (repeatable)
      --ro-cwd        share the working directory read-only
      --copy-cwd      work on a disposable copy of the working directory
      --no-cwd        share no working directory; CMD starts in the empty $HOME
Resources (cgroups; a limit that cannot be installed stops the run):
      --memory SIZE   memory limit, e.g. 512M, 2G (no swap beyond it)
      --pids N        limit on processes and threads (bwrap's own two count)
      --cpus N        CPU time, e.g. 0.5 or 2
      --timeout DUR   SIGTERM after DUR (90s, 5m, 1h30m), SIGKILL 2s later
Environment:
      --env VAR       pass VAR from airlock's environment (repeatable); VAR=VALUE sets it.
                      Nothing else passes: SSH_AUTH_SOCK, AWS_*, GITHUB_TOKEN... stay out
Network:
      --pool CIDR     sandbox address pool, one /30 each (default 198.18.0.0/15)
      --state-dir DIR where sandbox records live (default /run/airlock/sandboxes);
                      'airlock gc' and address allocation see only their own DIR
  -h, --help          this text

Exit status: CMD's (128+N when signal N ended it); 124 when --timeout ended it; 125 when
the sandbox could not be set up (the message names the step; CMD never started) or the
options are wrong; 126 when CMD is not executable; 127 when CMD is not found.
Needs root (network namespaces, nftables, cgroups) or a daemon's sandbox socket, and
bubblewrap.
)";

constexpr std::string_view gc_help = R"(Usage: airlock gc [--dry-run] [--state-dir DIR]

Removes what an 'airlock run' left behind when it was killed before it could clean up
(kill -9, a crash): its cgroups and any process still in them, the nft table and veth in
the gateway namespace, the /run/netns/airlock-ID pin, a --copy-cwd copy, and its session
in the daemon. Reads the records under /run/airlock/sandboxes; a sandbox whose airlock
is still running is never touched, and neither is an attachment whose namespace exists
('airlock detach' removes those).

Options:
      --dry-run       list what would be removed
      --state-dir DIR the records to read (default /run/airlock/sandboxes)
  -h, --help          this text

Exit status: 0 when everything found was removed (or there was nothing), 1 otherwise.
)";

constexpr std::string_view attach_help = R"(Usage: airlock attach --netns PATH|NAME [--policy NAME] [OPTIONS]

Puts a network namespace made by someone else (podman, containerd, a Kubernetes pod)
behind airlock: a veth pair into it ('airlock0', an address from the pool), its default
route through this host, IPv6 off, a guard table inside it that drops every packet not
leaving through airlock0 (and sends DNS to airlock), and here the same gateway table as
'airlock run' installs. The session is registered with the daemon on --control and
stays until 'airlock detach'. The guard holds as long as the workload lacks
CAP_NET_ADMIN in its namespace (containers' default).

Options:
      --netns PATH|NAME   the namespace: a path (/proc/PID/ns/net) or a name under /run/netns
      --control PATH      the daemon's control socket (default /run/airlock/control.sock)
      --policy NAME       the policy for the namespace (default: the daemon's default)
      --allow HOST[:PORT] also allow HOST (repeatable)
      --session ID        the session id (default: the daemon picks one)
      --label K=V         a label on the session (repeatable)
      --pool CIDR         address pool (default 198.18.0.0/15)
      --state-dir DIR     where the record is kept (default /run/airlock/sandboxes)
  -h, --help              this text

Exit status: 0 attached (the session id is printed), 1 when a step failed (everything
done until then is undone), 2 for bad arguments.
)";

constexpr std::string_view detach_help = R"(Usage: airlock detach --netns PATH|NAME [--state-dir DIR]

Undoes 'airlock attach': ends the session, removes the guard table, the veth pair and
the gateway table, and puts the namespace's previous default routes back.

Options:
      --netns PATH|NAME   the namespace given to 'airlock attach'
      --state-dir DIR     the state directory given to 'airlock attach'
  -h, --help              this text

Exit status: 0 detached, 1 when a step failed, 2 for bad arguments or no attachment.
)";

constexpr command table[] = {
    {"daemon", "run the proxy and DNS server", daemon_help, run_daemon_command},
    {"check", "validate a policy file", check_help, run_check_command},
    {"test", "ask a policy about one host and port", test_help, run_test_command},
    {"ca", "create the local CA for TLS inspection", ca_help, run_ca_command},
    {"nft-rules", "print the nftables rules of a gateway or a sidecar", nft_rules_help, run_nft_rules_command},
    {"explain", "tell a session's story from the decision log", explain_help, run_explain_command},
    {"tail", "watch the daemon's decisions as they are made", tail_help, run_tail_command},
    {"grant", "let a session reach a host for a tool call, a time or N connections", grant_help, run_grant_command},
    {"approve", "answer the daemon's held denials at a prompt or by a program", approve_help, run_approve_command},
    {"suggest", "suggest the policy a session needed, from the decision log", suggest_help, run_suggest_command},
    {"run", "run a command in a sandbox whose only way out is airlock", run_help, run_run_command},
    {"gc", "remove what killed 'airlock run's left behind", gc_help, run_gc_command},
    {"attach", "put someone else's network namespace behind airlock", attach_help, run_attach_command},
    {"detach", "undo 'airlock attach'", detach_help, run_detach_command},
};

}  // namespace

std::span<const command> commands() { return table; }

}  // namespace airlock::app
