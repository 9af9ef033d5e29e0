// The subcommand table: names, one-line summaries and full --help texts.
#include "app/cli.hpp"

namespace airlock::app {

int run_daemon_command(args a);
int run_check_command(args a);
int run_test_command(args a);
int run_ca_command(args a);
int run_nft_rules_command(args a);
int run_explain_command(args a);
int run_suggest_command(args a);

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

constexpr std::string_view test_help = R"(Usage: airlock test [-c FILE] --policy NAME HOST[:PORT]

Prints the decision the policy NAME makes for a connection to HOST on PORT
(default 443): 'allow' or 'deny', the reason code and the rule (FILE:LINE or
'default'). HOST may be a name or an IP address ([V6]:PORT for IPv6 with a port).
Names that resolve to private addresses are judged at connection time, not here.

Options:
  -c, --config FILE   policy file; default: the embedded default policy
      --policy NAME   the policy to ask (required)
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

constexpr std::string_view nft_rules_help = R"(Usage: airlock nft-rules --iface IFACE [--proxy-port N] [--dns-port N] [--table NAME]

Prints the nftables ruleset (for 'nft -f -') that makes this host the gateway for a
sandbox behind IFACE: TCP is redirected to airlock's proxy, DNS (UDP and TCP 53) to
airlock's DNS server, and everything else from IFACE is dropped: no forwarding, no
other local port, no ICMP, no IPv6 beyond what is redirected.
The table is one atomic unit: 'nft delete table inet NAME' removes it.

Options:
      --iface IFACE     the gateway-side interface the sandbox's traffic arrives on
      --proxy-port N    airlock's transparent proxy port (default 15001)
      --dns-port N      airlock's DNS port (default 15053)
      --table NAME      nft table name (default airlock_IFACE)
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

constexpr command table[] = {
    {"daemon", "run the proxy and DNS server", daemon_help, run_daemon_command},
    {"check", "validate a policy file", check_help, run_check_command},
    {"test", "ask a policy about one host and port", test_help, run_test_command},
    {"ca", "create the local CA for TLS inspection", ca_help, run_ca_command},
    {"nft-rules", "print the gateway nftables rules for a sandbox interface", nft_rules_help, run_nft_rules_command},
    {"explain", "tell a session's story from the decision log", explain_help, run_explain_command},
    {"suggest", "suggest the policy a session needed, from the decision log", suggest_help, run_suggest_command},
};

}  // namespace

std::span<const command> commands() { return table; }

}  // namespace airlock::app
